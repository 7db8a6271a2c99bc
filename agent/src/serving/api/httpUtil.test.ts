import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from './ApiError.js';
import { readJsonBody } from './httpUtil.js';

const LIMIT = 2 * 2 ** 20;
let server: Server;
let port: number;

beforeAll(async () => {
  // Answers what readJsonBody made of the body: its size as JSON, or the error's status.
  server = createServer((req, res) => {
    readJsonBody(req, LIMIT).then(
      (v) => res.end(JSON.stringify({ chars: JSON.stringify(v).length })),
      (e: unknown) => {
        res.statusCode = e instanceof ApiError ? e.status : 500;
        res.setHeader('connection', 'close');
        res.end(JSON.stringify({ error: (e as Error).message }));
      },
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** POSTs `parts` one write each; with `length` a Content-Length, else chunked. */
function send(parts: Buffer[], length?: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ port, method: 'POST', headers: length === undefined ? {} : { 'content-length': length } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    for (const p of parts) req.write(p);
    req.end();
  });
}

const json = JSON.stringify({ prompt: 'é'.repeat(300_000), n: [1, 2, 3] });
const split = (s: string, n: number): Buffer[] => {
  const b = Buffer.from(s);
  return Array.from({ length: n }, (_, i) => b.subarray(Math.floor((i * b.length) / n), Math.floor(((i + 1) * b.length) / n)));
};

describe('readJsonBody', () => {
  it('reads a large body with a Content-Length into one buffer, and a chunked one, to the same value', async () => {
    const parts = split(json, 7);
    expect(await send(parts, Buffer.byteLength(json))).toEqual({ status: 200, body: JSON.stringify({ chars: json.length }) });
    expect(await send(parts)).toEqual({ status: 200, body: JSON.stringify({ chars: json.length }) });
  });

  it('refuses a body past the limit: at once when declared, as it comes when chunked', async () => {
    const big = Buffer.alloc(LIMIT + 1, 0x20);
    // Declared too large: answered before the body is read (only 2 of the bytes are ever sent).
    const declared = await send([Buffer.from('{}')], LIMIT + 1);
    expect(declared.status).toBe(413);
    const chunked = await send(split(big.toString(), 4));
    expect(chunked.status).toBe(413);
    expect(chunked.body).toMatch(/larger than 2097152 bytes/);
  });
});
