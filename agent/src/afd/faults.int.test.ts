/**
 * Faults with real role processes (CPU, tiny model): an FFN rank killed mid-generation,
 * an attention rank killed, ranks stopped in the wrong order, and bad rendezvous ports.
 * The survivors report the failure within the step deadline, stay alive with /health
 * 503 naming the lost peer, and recover when the peer comes back. No process is left.
 */
import { createServer, type Server } from 'node:http';
import { describe, expect, it } from 'vitest';
import { freePort, freePortBlock } from '@afd/native/ports';
import { complete, health } from '../testing/rankHttp.js';
import { until } from '../testing/until.js';
import { RoleProcess, type RoleProcessOptions } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';

const { home, model } = useTinyModelSetup({ homePrefix: 'afd-runtime-faults-', arch: 'qwen3_moe', timeoutMs: 120_000 });
const stepDeadlineMs = 2000;
const config = { stepDeadlineMs };

async function start(o: Omit<RoleProcessOptions, 'model' | 'home' | 'config'>): Promise<RoleProcess> {
  return RoleProcess.start({ ...o, model, home, config });
}

/** 1A1F: FFN rank 0, then attention rank 0, both ready. */
async function start1A1F(): Promise<{ ffn: RoleProcess; attn: RoleProcess; url: string; ffnUrl: string }> {
  const afdPort = await freePortBlock(1);
  const ffn = await start({ role: 'ffn', rank: 0, topology: '1A1F', afdPort });
  const attn = await start({ role: 'attention', rank: 0, topology: '1A1F', afdPort });
  const url = await attn.ready();
  const ffnUrl = await ffn.ready();
  return { ffn, attn, url, ffnUrl };
}

describe('AFD faults with real role processes', () => {
  it('an FFN rank killed mid-generation: attention fails the request within the deadline, stays alive with 503, recovers', { timeout: 180_000 }, async () => {
    const afdPort = await freePortBlock(1);
    const ffn = await start({ role: 'ffn', rank: 0, topology: '2A1F', afdPort });
    const a0 = await start({ role: 'attention', rank: 0, topology: '2A1F', afdPort });
    const a1 = await start({ role: 'attention', rank: 1, topology: '2A1F', afdPort });
    const [url0, url1] = await Promise.all([a0.ready(), a1.ready()]);
    expect((await health(url0)).status).toBe(200);

    // 3000 tokens fit the 16 MiB KV cache and take far longer than the test waits.
    let settled = false;
    const long = complete(url0, [1, 2, 3, 4], 3000).then(
      () => ({ ok: true as const, ms: 0 }),
      (err: Error) => ({ ok: false as const, ms: Date.now(), message: err.message }),
    );
    void long.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 1000)); // generation is under way
    expect(settled).toBe(false);
    const killedAt = Date.now();
    await ffn.kill();
    const outcome = await long;
    expect(outcome.ok).toBe(false);
    // The killed peer's EOF fails the step at once; the bound (deadline + slack for a loaded
    // 2-core CI box, where the HTTP error can take a few seconds to surface) proves no hang.
    expect(outcome.ms - killedAt).toBeLessThan(stepDeadlineMs + 4000);

    for (const [p, url] of [[a0, url0], [a1, url1]] as const) {
      await until(async () => (await health(url)).status === 503, `${p.name} /health 503`);
      expect((await health(url)).body.reason).toMatch(/FFN rank 0 at 127\.0\.0\.1/);
      expect(p.alive).toBe(true);
    }

    // The FFN rank comes back: both attention ranks reconnect and serve again.
    const again = await start({ role: 'ffn', rank: 0, topology: '2A1F', afdPort });
    await again.ready();
    await until(async () => (await health(url0)).status === 200 && (await health(url1)).status === 200, 'recovery');
    expect((await complete(url1, [5, 6, 7], 3)).text.length).toBeGreaterThan(0);

    for (const p of [a0, a1]) expect((await p.stop()).code).toBe(0);
    expect((await again.exited).code).toBe(0);
  });

  it('a hung FFN rank (SIGSTOP): the step fails within the deadline naming the peer; it recovers after SIGCONT', { timeout: 180_000 }, async () => {
    const { ffn, attn, url } = await start1A1F();
    ffn.child.kill('SIGSTOP'); // no EOF, no RST: only the deadline can tell
    try {
      const t0 = Date.now();
      await expect(complete(url, [1, 2, 3], 3)).rejects.toThrow();
      const waited = Date.now() - t0;
      expect(waited).toBeGreaterThanOrEqual(stepDeadlineMs - 200);
      expect(waited).toBeLessThan(stepDeadlineMs + 5000); // slack for a loaded 2-core CI box
      await until(async () => (await health(url)).status === 503, 'attention /health 503');
      expect((await health(url)).body.reason).toMatch(/FFN rank 0 at 127\.0\.0\.1.*timed out/);
    } finally {
      ffn.child.kill('SIGCONT');
    }
    await until(async () => (await health(url)).status === 200, 'recovery after SIGCONT');
    expect((await complete(url, [4, 5], 2)).text.length).toBeGreaterThan(0);
    expect((await attn.stop()).code).toBe(0);
    expect((await ffn.exited).code).toBe(0);
  });

  it('an attention rank killed: its block peer and the FFN rank report it and recover when it restarts', { timeout: 180_000 }, async () => {
    const afdPort = await freePortBlock(1);
    const ffn = await start({ role: 'ffn', rank: 0, topology: '2A1F', afdPort });
    const a0 = await start({ role: 'attention', rank: 0, topology: '2A1F', afdPort });
    const a1 = await start({ role: 'attention', rank: 1, topology: '2A1F', afdPort });
    const [url0] = await Promise.all([a0.ready(), a1.ready()]);
    const ffnUrl = await ffn.ready();
    expect((await complete(url0, [1, 2, 3], 3)).text.length).toBeGreaterThan(0);

    await a1.kill();
    await until(async () => (await health(ffnUrl)).status === 503, 'FFN /health 503');
    await until(async () => (await health(url0)).status === 503, 'attention 0 /health 503');
    expect(ffn.alive && a0.alive).toBe(true);

    const a1again = await start({ role: 'attention', rank: 1, topology: '2A1F', afdPort });
    await a1again.ready();
    await until(async () => (await health(url0)).status === 200 && (await health(ffnUrl)).status === 200, 'recovery').catch(async (err: Error) => {
      throw new Error(`${err.message}: attention 0 ${JSON.stringify(await health(url0))}, ffn ${JSON.stringify(await health(ffnUrl))}`);
    });
    expect((await complete(url0, [1, 2, 3], 3)).text.length).toBeGreaterThan(0);

    for (const p of [a0, a1again]) expect((await p.stop()).code).toBe(0);
    expect((await ffn.exited).code).toBe(0);
  });

  it('stopped in the wrong order: the FFN rank stops cleanly first, attention stays up with 503, then stops', { timeout: 120_000 }, async () => {
    const { ffn, attn, url, ffnUrl } = await start1A1F();
    // Driving the FFN rank like a scheduler-owned server fails fast and says why.
    const misrouted = await fetch(`${ffnUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","prompt":"hi"}' });
    expect(misrouted.status).toBe(404);
    expect(((await misrouted.json()) as { error: { message: string } }).error.message).toMatch(/FFN role.*attention rank/);
    expect((await ffn.stop()).code).toBe(0);
    expect(ffn.events.at(-1)?.type).toBe('stopped');
    await until(async () => (await health(url)).status === 503, 'attention /health 503');
    await expect(complete(url, [1, 2], 2)).rejects.toThrow();
    expect(attn.alive).toBe(true);
    expect((await attn.stop()).code).toBe(0);
  });

  it('bad rendezvous ports: a busy FFN port and a non-AFD server fail fast with clear errors', { timeout: 120_000 }, async () => {
    // The FFN port is taken by another program.
    const busy: Server = createServer((_, res) => res.end('not afd'));
    const port = await freePort();
    await new Promise<void>((resolve) => busy.listen(port, '127.0.0.1', resolve));
    try {
      const ffn = await start({ role: 'ffn', rank: 0, topology: '1A1F', afdPort: port });
      const failed = await ffn.waitFor((e): e is Extract<typeof e, { type: 'failed' }> => e.type === 'failed', 'failed');
      expect(failed.message).toMatch(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}.*in use`));
      expect((await ffn.exited).code).toBe(1);

      // An attention rank pointed at that (HTTP) server: the handshake fails at once.
      const attn = await start({ role: 'attention', rank: 0, topology: '1A1F', afdPort: port });
      const bad = await attn.waitFor((e): e is Extract<typeof e, { type: 'failed' }> => e.type === 'failed', 'failed');
      expect(bad.message).toMatch(/FFN rank 0 at 127\.0\.0\.1.*really FFN rank 0 \(check --afd-port/);
      expect((await attn.exited).code).toBe(1);
    } finally {
      busy.close();
    }
  });
});
