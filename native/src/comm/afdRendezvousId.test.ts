/**
 * The rendezvous id of one start of a topology (the rank config's afd.rendezvousId), in one
 * process over real loopback TCP. Regression for a restart on the same ports: an attention
 * rank of the previous start, still in its reconnect loop, reached the new FFN rank first,
 * joined its block (same topology and model), and its graceful stop then sent the new FFN
 * rank the shutdown flag, so the new block never came up. With per-start ids the stale
 * rank is refused with the reason and the new start is untouched.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { AfdConfigInput } from '@afd/shared';
import { testRankConfig } from '../testing/afdTesting.js';
import { AttentionLink } from '../AttentionLink.js';
import { Engine } from '../engine.js';
import { FfnServer } from '../FfnServer.js';
import { generateGreedy, roleSpec, scatteredBlocks, writeTinyModel } from '../testing/engineTesting.js';

const engineOpts = { threads: 1, kvBlockSize: 4, numKvBlocks: 31 };
const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

async function load(dir: string, role: 'attention' | 'ffn'): Promise<Engine> {
  const e = await Engine.load(await roleSpec(dir, role, false), engineOpts);
  cleanup.push(() => e.close());
  return e;
}

function options(port: number, rendezvousId: string, rendezvousTimeoutMs = 10_000): AfdConfigInput {
  return { topology: '1A1F', rank: 0, port, stepDeadlineMs: 3000, rendezvousTimeoutMs, rendezvousId };
}

function ffnServer(engine: Engine, afd: AfdConfigInput): FfnServer {
  const server = new FfnServer(engine, testRankConfig('ffn', afd));
  cleanup.push(() => server.stop());
  return server;
}

function attention(engine: Engine, afd: AfdConfigInput): AttentionLink {
  const link = new AttentionLink(engine, testRankConfig('attention', afd));
  cleanup.push(() => link.close({ shutdown: false }));
  return link;
}

/** Loaded 2-core machines stall threads for seconds. */
const settle = { timeout: 15_000 };

describe('rendezvous id (one start of a topology)', () => {
  it('a stale attention rank of the previous start can neither join the restarted FFN rank nor shut it down', async () => {
    const dir = await writeTinyModel('qwen3_moe', 21);
    const [oldAttn, oldFfn, newAttn, newFfn] = await Promise.all([load(dir, 'attention'), load(dir, 'ffn'), load(dir, 'attention'), load(dir, 'ffn')]);
    // Start 1 on a free port; the restart binds the same port (as the agent's restart does).
    const first = ffnServer(oldFfn, options(0, 'start-1'));
    const port = first.listenPort();
    const stale = attention(oldAttn, options(port, 'start-1'));
    await Promise.all([first.start(), stale.connect()]);
    // The old FFN rank dies: the old attention rank starts redialing the port.
    await first.stop();
    await expect.poll(() => stale.state().state, settle).toBe('lost');

    const second = ffnServer(newFfn, options(port, 'start-2'));
    const serving = second.start();
    // The stale rank reaches the new listener first and is refused with the reason.
    await expect.poll(() => stale.state().lastError, settle).toMatch(/belongs to another start of the topology \(rendezvous id "start-1", this FFN rank's is "start-2"\)/);
    expect(second.state()).toMatchObject({ state: 'rendezvous', peersJoined: 0 });

    const fresh = attention(newAttn, options(port, 'start-2'));
    await Promise.all([serving, fresh.connect()]);
    expect(second.state()).toMatchObject({ state: 'serving', peersJoined: 1 });
    // The stale rank's graceful stop reaches nobody; the new block keeps serving.
    await stale.close({ shutdown: true, reason: 'old start stopping' });
    const got = await generateGreedy(newAttn, [3, 17, 5, 9], 3, { blocks: scatteredBlocks(4, 1, 31) });
    expect(got.tokens).toHaveLength(3);
    expect(second.state().state).toBe('serving');
    await fresh.close({ shutdown: true });
    expect(await second.wait()).toMatch(/shutdown requested by attention rank 0/);
  });

  it('a hand-started rank without an id is refused by an FFN rank of an agent start', async () => {
    const dir = await writeTinyModel('qwen3_moe', 22);
    const [attn, ffn] = await Promise.all([load(dir, 'attention'), load(dir, 'ffn')]);
    const server = ffnServer(ffn, options(0, 'agent-start'));
    const port = server.listenPort();
    void server.start().catch(() => undefined);
    const link = attention(attn, options(port, '', 3000));
    await expect(link.connect()).rejects.toThrow(/rendezvous id none, this FFN rank's is "agent-start"/);
  });

  it('refuses an id longer than 256 bytes when the connector is built', async () => {
    const dir = await writeTinyModel('qwen3_moe', 23);
    const ffn = await load(dir, 'ffn');
    // The schema holds ids to 128 characters; native's own guard refuses a longer one in a raw config.
    expect(() => ffnServer(ffn, options(0, 'x'.repeat(129)))).toThrow(/afd\.rendezvousId: must be at most 128 letters/);
    const raw = testRankConfig('ffn', options(0, ''));
    expect(() => new FfnServer(ffn, { ...raw, afd: { ...raw.afd, rendezvousId: 'x'.repeat(257) } })).toThrow(/rendezvous id of 257 bytes is too long/);
  });
});
