/**
 * Port allocation for role processes and tests, imported as '@afd/native/ports'. HTTP ports are best left to the kernel (pass 0 and
 * read the role's `listening` event); the AFD rendezvous needs a base port P with P + f
 * free for every FFN rank f on this host, which we find by test-binding each port.
 */
import { createServer } from 'node:net';

/** True when `port` can be bound on `host` right now. */
export function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the kernel picks as free on `host` (closed again before returning). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('could not read the bound port'))));
    });
  });
}

/**
 * A base port P such that P .. P + count - 1 are all free on `host`. Tries random bases
 * in [minPort, maxPort - count]; throws after `attempts` tries with a clear message.
 * The default range ends below Linux's ephemeral range (32768-60999): a port found free
 * there can be taken by an outgoing connection before the FFN rank binds it.
 */
export async function freePortBlock(count: number, host = '127.0.0.1', minPort = 20_000, maxPort = 32_768, attempts = 50): Promise<number> {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`port block size must be a positive integer (got ${count})`);
  for (let i = 0; i < attempts; i++) {
    const base = minPort + Math.floor(Math.random() * (maxPort - minPort - count));
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await isPortFree(host, p);
    if (ok) return base;
  }
  throw new Error(`no block of ${count} free ports found on ${host} between ${minPort} and ${maxPort} after ${attempts} tries; pass an explicit AFD base port`);
}
