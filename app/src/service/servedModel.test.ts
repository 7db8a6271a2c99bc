import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readServedModel } from './servedModel.js';

let url = '';
const server = createServer((req, res) => {
  if (req.headers.authorization !== 'Bearer k-1') return void res.writeHead(401).end('{"error":{"message":"missing or invalid API key"}}');
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'tiny-id', object: 'model', afd: { name: 'Tiny', parameters: 5, description: null, example_prompts: [] } }] }));
});
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => server.close());

describe('readServedModel', () => {
  it('reads the id and the info with the key, and nothing when refused', async () => {
    expect(await readServedModel(url, 'k-1')).toEqual({ modelId: 'tiny-id', model: { name: 'Tiny', parameters: 5, description: null, examplePrompts: [] } });
    expect(await readServedModel(url, undefined)).toEqual({ model: null, modelId: null });
  });
});
