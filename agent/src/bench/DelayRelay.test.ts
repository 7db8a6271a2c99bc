/**
 * The delaying relay on loopback: a round trip through it takes at least twice the
 * one-way delay (and not much more), bytes arrive intact and in order, a half close is
 * passed on, a refused upstream resets the client, and the delay can change at run time.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePortBlock } from '@afd/native/ports';
import { DelayRelay } from './DelayRelay.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An echo server on an ephemeral loopback port. */
async function echoServer(): Promise<number> {
  const server: Server = createServer({ allowHalfOpen: true }, (s) => {
    s.on('data', (d) => s.write(d));
    s.on('end', () => s.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return (server.address() as { port: number }).port;
}

function dial(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, allowHalfOpen: true }, () => resolve(s));
    s.setNoDelay(true);
    s.once('error', reject);
    cleanups.push(() => void s.destroy());
  });
}

/** Sends `bytes` and resolves with the echo once it is complete, and the time it took. */
function roundTrip(s: Socket, bytes: Buffer): Promise<{ data: Buffer; ms: number }> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    let got = 0;
    const t0 = performance.now();
    const onData = (d: Buffer): void => {
      parts.push(d);
      got += d.length;
      if (got >= bytes.length) {
        s.off('data', onData);
        resolve({ data: Buffer.concat(parts), ms: performance.now() - t0 });
      }
    };
    s.on('data', onData);
    s.write(bytes);
  });
}

async function relayTo(port: number, delayMs: number): Promise<{ relay: DelayRelay; port: number }> {
  // The relay listens on a port of its own and forwards to the same port number upstream,
  // so listen on another loopback address (127.0.0.2 is loopback on Linux).
  const relay = await DelayRelay.start({ listenHost: '127.0.0.2', targetHost: '127.0.0.1', ports: [port], delayMs });
  cleanups.push(() => relay.close());
  return { relay, port };
}

describe('DelayRelay', () => {
  it('adds the one-way delay in both directions, bytes intact and in order', async () => {
    const port = await echoServer();
    const { relay } = await relayTo(port, 20);
    const direct = await dial(port);
    const s = await new Promise<Socket>((resolve, reject) => {
      const c = connect({ host: '127.0.0.2', port }, () => resolve(c));
      c.setNoDelay(true);
      c.once('error', reject);
      cleanups.push(() => void c.destroy());
    });
    const payload = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));
    const base = await roundTrip(direct, payload);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await roundTrip(s, payload);
      expect(r.data.equals(payload)).toBe(true);
      times.push(r.ms);
    }
    const best = Math.min(...times);
    // Two crossings of 20 ms each: at least 40 ms; timers and a loaded box add a few ms.
    expect(best).toBeGreaterThanOrEqual(40);
    expect(best).toBeLessThan(40 + base.ms + 40);
    const st = relay.stats();
    expect(st.connections).toBe(1);
    expect(st.bytes).toBe(payload.length * 2 * 5);
    expect(st.meanDelayUs).toBeGreaterThanOrEqual(20_000);
  });

  it('delays one direction only when asked: the answers (from-target) or the requests (to-target)', async () => {
    const port = await echoServer();
    for (const direction of ['from-target', 'to-target'] as const) {
      const relay = await DelayRelay.start({ listenHost: '127.0.0.2', targetHost: '127.0.0.1', ports: [port], delayMs: 30, direction });
      cleanups.push(() => relay.close());
      const s = await new Promise<Socket>((resolve) => {
        const c = connect({ host: '127.0.0.2', port }, () => resolve(c));
        c.setNoDelay(true);
        cleanups.push(() => void c.destroy());
      });
      const times: number[] = [];
      for (let i = 0; i < 3; i++) times.push((await roundTrip(s, Buffer.from(`ping ${i}`))).ms);
      // One crossing of 30 ms, not two.
      expect(Math.min(...times), direction).toBeGreaterThanOrEqual(30);
      expect(Math.min(...times), direction).toBeLessThan(55);
      // Only the delayed direction's chunks are counted.
      expect(relay.stats().chunks, direction).toBe(3);
      expect(relay.stats().meanDelayUs, direction).toBeGreaterThanOrEqual(30_000);
      await relay.close();
    }
    await expect(DelayRelay.start({ listenHost: '127.0.0.2', targetHost: '127.0.0.1', ports: [port], delayMs: 1, direction: 'sideways' as never })).rejects.toThrow(
      /direction must be one of both, to-target, from-target/,
    );
  });

  it('changes the delay at run time', async () => {
    const port = await echoServer();
    const { relay } = await relayTo(port, 0);
    const s = await new Promise<Socket>((resolve) => {
      const c = connect({ host: '127.0.0.2', port }, () => resolve(c));
      c.setNoDelay(true);
      cleanups.push(() => void c.destroy());
    });
    const fast = (await roundTrip(s, Buffer.from('x'))).ms;
    relay.setDelayMs(30);
    relay.resetStats();
    const slow = (await roundTrip(s, Buffer.from('y'))).ms;
    expect(slow).toBeGreaterThanOrEqual(60);
    expect(slow).toBeGreaterThan(fast);
    expect(relay.stats().chunks).toBe(2);
    expect(() => relay.setDelayMs(-1)).toThrow(/0\.\.10000/);
  });

  it('passes a half close on after the delay, and resets the client when upstream refuses', async () => {
    const port = await echoServer();
    await relayTo(port, 5);
    const s = await new Promise<Socket>((resolve) => {
      const c = connect({ host: '127.0.0.2', port, allowHalfOpen: true }, () => resolve(c));
      cleanups.push(() => void c.destroy());
    });
    const ended = new Promise<string>((resolve) => {
      let text = '';
      s.on('data', (d: Buffer) => (text += d.toString()));
      s.on('end', () => resolve(text));
    });
    s.write('bye');
    s.end();
    expect(await ended).toBe('bye');

    const closed = await freePortBlock(1); // nothing listens there
    const relay = await DelayRelay.start({ listenHost: '127.0.0.2', targetHost: '127.0.0.1', ports: [closed], delayMs: 1 });
    cleanups.push(() => relay.close());
    const c = connect({ host: '127.0.0.2', port: closed });
    const outcome = await new Promise<string>((resolve) => {
      c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      c.on('close', () => resolve('closed'));
    });
    expect(['ECONNRESET', 'closed']).toContain(outcome);
  });

  it('refuses a port it cannot bind, naming it', async () => {
    const port = await echoServer();
    await expect(DelayRelay.start({ listenHost: '127.0.0.1', targetHost: '127.0.0.1', ports: [port], delayMs: 1 })).rejects.toThrow(`127.0.0.1:${port}`);
  });
});
