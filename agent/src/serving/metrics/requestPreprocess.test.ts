/** afd:request_preprocess_seconds over a real HTTP server (FakeEngine, the Qwen3 tokenizer). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { histogramOf, parseExposition } from '../testing/promExposition.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { PREPROCESS_BUCKETS } from './requestPreprocess.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ engine: { maxModelLen: 256 } });
});
afterAll(() => srv.close());

const post = (path: string, body: unknown) => fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function stages(): Promise<Record<string, { count: number; sum: number; edges: number[] }>> {
  const f = parseExposition(await (await fetch(`${srv.url}/metrics`)).text()).get('afd:request_preprocess_seconds');
  if (!f) throw new Error('no afd:request_preprocess_seconds family');
  expect(f.type).toBe('histogram');
  return Object.fromEntries(['body', 'prompt', 'submit'].map((stage) => [stage, histogramOf(f, { stage, model_name: 'tiny' })]));
}

describe('afd:request_preprocess_seconds', () => {
  it('starts at zero for every stage, with its buckets', async () => {
    const s = await stages();
    for (const h of Object.values(s)) {
      expect(h.count).toBe(0);
      expect(h.edges).toEqual(PREPROCESS_BUCKETS);
    }
  });

  it('a chat, a completion and a response each observe body, prompt and submit once; refusals and tokenize observe only what they finished', async () => {
    expect((await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 2 })).status).toBe(200);
    expect((await post('/v1/completions', { model: 'tiny', prompt: 'hello', max_tokens: 2, stream: true })).status).toBe(200);
    expect((await post('/v1/responses', { model: 'tiny', input: 'hello', max_output_tokens: 2 })).status).toBe(200);
    let s = await stages();
    expect([s['body']!.count, s['prompt']!.count, s['submit']!.count]).toEqual([3, 3, 3]);
    for (const h of Object.values(s)) expect(h.sum).toBeGreaterThan(0);
    // A field the server refuses: the body was read, nothing else.
    expect((await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'x' }], best_of: 2 })).status).toBe(400);
    // /tokenize is not a generation.
    expect((await post('/tokenize', { model: 'tiny', prompt: 'hello' })).status).toBe(200);
    s = await stages();
    expect([s['body']!.count, s['prompt']!.count, s['submit']!.count]).toEqual([4, 3, 3]);
  });
});
