/**
 * A stalled (not dead) FFN rank, in one process over real loopback TCP: a relay between
 * the attention link and the FFN server holds the FFN's answers past the step deadline, as
 * a SIGSTOPped FFN process would. With one layer, the FFN rank finishes its step and then
 * waits on the old link for the next one; the attention rank, which gave that link up,
 * must hang it up so the FFN rank gathers its block again and takes the reconnection.
 * (The multi-process version, SIGSTOP on a real rank, is agent/src/launch/hungFfn.int.test.ts.)
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { buildStepPlan } from '@afd/shared';
import { AttentionLink } from '../AttentionLink.js';
import { Engine } from '../engine.js';
import { FfnServer } from '../FfnServer.js';
import { afdEngineOpts, testRankConfig } from '../testing/afdTesting.js';
import { roleSpec } from '../testing/engineTesting.js';
import { tempDir, tinyQwen3MoeConfig, writeTestModel } from '../testing/checkpointTesting.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** Frame header bytes and the FFN-output kind of the connector's wire (comm/frame.h). */
const kFrameHeaderBytes = 80;
const kFfnOutput = 9;

/**
 * A TCP relay that reads the FFN-to-attention stream frame by frame and, once armed, holds
 * everything from the next FFN output on (the step was announced; its answer is late), then
 * releases it.
 */
class HoldingRelay {
  holdFromFfnOutput = false;
  connections = 0;
  private holding = false;
  private readonly held: { to: Socket; data: Buffer }[] = [];
  private readonly server: Server;

  constructor(private readonly upstreamPort: number) {
    this.server = createServer({ allowHalfOpen: true }, (client) => this.relay(client));
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  release(): void {
    this.holdFromFfnOutput = this.holding = false;
    for (const { to, data } of this.held.splice(0)) if (!to.destroyed) to.write(data);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket): void {
    this.connections++;
    const upstream = connect({ port: this.upstreamPort, host: '127.0.0.1', allowHalfOpen: true });
    client.on('data', (d) => upstream.write(d));
    client.on('end', () => upstream.end()); // the attention rank hung up: the FFN rank reads EOF
    let pending = Buffer.alloc(0);
    upstream.on('data', (d) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= kFrameHeaderBytes) {
        const size = kFrameHeaderBytes + Number(pending.readBigUInt64LE(24));
        if (pending.length < size) break;
        const frame = pending.subarray(0, size);
        pending = pending.subarray(size);
        if (this.holdFromFfnOutput && frame.readUInt16LE(6) === kFfnOutput) this.holding = true;
        if (this.holding) this.held.push({ to: client, data: frame });
        else client.write(frame);
      }
    });
    upstream.on('end', () => client.end());
    for (const s of [client, upstream]) {
      s.on('error', () => {});
      s.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
  }
}

async function load(dir: string, role: 'attention' | 'ffn'): Promise<Engine> {
  const e = await Engine.load(await roleSpec(dir, role), afdEngineOpts);
  cleanup.push(() => e.close());
  return e;
}

describe('AFD runtime: a stalled FFN rank', () => {
  it('an FFN rank that finished its step after the deadline takes the reconnection at once', { timeout: 60_000 }, async () => {
    // One layer: a step's last FFN output is its only one, so the FFN rank ends the step
    // normally and waits for the next on the link the attention rank gave up.
    const dir = await tempDir('afd-stalled-ffn-');
    await writeTestModel(dir, tinyQwen3MoeConfig({ num_hidden_layers: 1, mlp_only_layers: [] }), { seed: 3 });
    const attn = await load(dir, 'attention');
    const ffn = await load(dir, 'ffn');
    const deadline = { stepDeadlineMs: 1000, rendezvousTimeoutMs: 10_000 };
    const server = new FfnServer(ffn, testRankConfig('ffn', { ...deadline, topology: '1A1F', rank: 0, port: 0 }));
    cleanup.push(() => server.stop());
    const relay = new HoldingRelay(server.listenPort());
    cleanup.push(() => relay.close());
    const link = new AttentionLink(attn, testRankConfig('attention', { ...deadline, topology: '1A1F', rank: 0, port: await relay.listen() }));
    cleanup.push(() => link.close({ shutdown: false }));
    await Promise.all([server.start(), link.connect()]);

    const plan = (ids: number[]) => buildStepPlan([{ tokenIds: ids, numCached: 0, blockTable: [0] }]);
    await attn.step(plan([1, 2]));
    relay.holdFromFfnOutput = true;
    await expect(attn.step(plan([3, 4]))).rejects.toThrow(/timed out waiting for ffn-output from FFN rank 0/);
    await expect.poll(() => link.state().state, { timeout: 15_000 }).toBe('lost');
    // The FFN rank "wakes up": its held answer reaches the abandoned link. It must not keep
    // waiting there: the attention rank's hang-up is its EOF, and the new dial is answered.
    relay.release();
    await expect.poll(() => link.state().state, { timeout: 15_000 }).toBe('connected');
    expect(link.state().reconnects).toBe(1);
    expect(relay.connections).toBe(2);
    const r = await attn.step(plan([5, 6]));
    expect(r.tokenIds).toHaveLength(1);
  });
});
