/**
 * The serving layer's sampling controls and log-probabilities end to end over the FakeEngine
 * (which honours the plan's extras): what GenerateParams asks reaches the plan, and what the
 * engine returns reaches the request's events.
 */
import { describe, expect, it } from 'vitest';
import { ServingEngine, type GenerateParams, type GenerationEvent } from './ServingEngine.js';
import { FakeEngine, type FakeEngineOptions } from './testing/FakeEngine.js';
import { qwenTokenizer } from './testing/qwenTokenizer.js';
import { testServingOptions } from './testing/testServer.js';

const tok = await qwenTokenizer();
const EOS = 151_645;
const greedy = { temperature: 0, topK: 0, topP: 1 };

async function generate(engine: FakeEngineOptions, params: Partial<GenerateParams>): Promise<{ deltas: Extract<GenerationEvent, { type: 'delta' }>[]; done: GenerationEvent; text: string }> {
  const serving = new ServingEngine(new FakeEngine(engine), tok, testServingOptions);
  const h = serving.submit({ promptIds: tok.encode('Say hi'), sampling: greedy, maxTokens: 6, ...params });
  const deltas: Extract<GenerationEvent, { type: 'delta' }>[] = [];
  let done: GenerationEvent | undefined;
  for await (const e of h.events) {
    if (e.type === 'delta') deltas.push(e);
    else done = e;
  }
  return { deltas, done: done!, text: deltas.map((d) => d.text).join('') };
}

describe('ServingEngine: sampling controls', () => {
  it('logit_bias +100 makes every token the biased one', async () => {
    const world = tok.encode(' world', false)[0]!;
    const { deltas, text } = await generate({}, { logitBias: new Map([[world, 100]]), sampling: { ...greedy, temperature: 1 } });
    expect(deltas.flatMap((d) => d.tokenIds)).toEqual(new Array(6).fill(world));
    expect(text).toBe(' world'.repeat(6));
  });

  it('min_tokens: a model that prefers EOS still generates min_tokens tokens, then stops on EOS (its text left out)', async () => {
    const { deltas, done } = await generate({ nextToken: () => EOS }, { minTokens: 3, skipSpecialTokens: false });
    const ids = deltas.flatMap((d) => d.tokenIds);
    expect(ids).toHaveLength(4);
    expect(ids.slice(0, 3)).not.toContain(EOS);
    expect(ids[3]).toBe(EOS);
    expect(deltas[3]!.text).toBe('');
    expect(done).toMatchObject({ finishReason: 'stop', completionTokens: 4 });
  });

  it('a stop token id ends generation, its text kept only with include_stop_str_in_output', async () => {
    const world = tok.encode(' world', false)[0]!;
    const words = tok.encode(' hello world again', false);
    const engine = { nextToken: ({ position }: { position: number }) => words[(position - 3) % words.length]! };
    const prompt = { promptIds: [1, 2, 3] };
    expect((await generate(engine, { ...prompt, stopTokenIds: [world] })).text).toBe(' hello');
    expect((await generate(engine, { ...prompt, stopTokenIds: [world], includeStopStrInOutput: true })).text).toBe(' hello world');
    expect((await generate(engine, { ...prompt, stop: [' wor'], includeStopStrInOutput: true })).text).toBe(' hello wor');
  });

  it('refuses logit_bias and stop_token_ids ids outside the vocabulary, min_tokens above max_tokens, and n above max-num-seqs', () => {
    const serving = new ServingEngine(new FakeEngine({ vocabSize: 1000 }), tok, testServingOptions);
    const base = { promptIds: [1, 2], sampling: greedy, maxTokens: 4 };
    expect(() => serving.checkRequest({ ...base, logitBias: new Map([[1000, 1]]) })).toThrow(expect.objectContaining({ param: 'logit_bias', message: expect.stringMatching(/logit_bias token id 1000 is outside the vocabulary \[0, 1000\)/) }));
    expect(() => serving.checkRequest({ ...base, stopTokenIds: [-1] })).toThrow(expect.objectContaining({ param: 'stop_token_ids' }));
    expect(() => serving.checkRequest({ ...base, minTokens: 5 })).toThrow(expect.objectContaining({ param: 'min_tokens' }));
    expect(() => serving.checkRequest({ ...base, n: testServingOptions.scheduler.maxNumSeqs + 1 })).toThrow(expect.objectContaining({ param: 'n' }));
    expect(serving.checkRequest({ ...base, n: 2 })).toBe(4);
    expect(() => serving.checkRequest({ ...base, promptIds: new Array(5000).fill(1) }, 'prompt')).toThrow(expect.objectContaining({ param: 'prompt' }));
  });
});

describe('ServingEngine: log-probabilities', () => {
  it('each delta carries the logprob row of its token; the first one the prompt rows', async () => {
    const promptIds = tok.encode('Say hi');
    const { deltas } = await generate({}, { logprobs: 2, promptLogprobs: 1 });
    for (const d of deltas) {
      expect(d.logprobs).toHaveLength(1);
      expect(d.logprobs![0]).toMatchObject({ tokenId: d.tokenIds[0], rank: 1 });
      expect(d.logprobs![0]!.top).toHaveLength(2);
    }
    expect(deltas[0]!.promptLogprobs!.map((r) => r.tokenId)).toEqual(promptIds.slice(1));
    expect(deltas.slice(1).every((d) => d.promptLogprobs === undefined)).toBe(true);
  });

  it('no logprobs asked, none carried', async () => {
    const { deltas } = await generate({}, {});
    expect(deltas.every((d) => d.logprobs === undefined && d.promptLogprobs === undefined)).toBe(true);
  });
});
