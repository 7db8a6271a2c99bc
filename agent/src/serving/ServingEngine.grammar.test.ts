/**
 * Structured outputs through the serving loop: the FakeEngine (which keeps only the tokens
 * a mask row allows) and a real GrammarService (xgrammar workers, Qwen3 vocabulary). Every
 * constrained request decodes to what its spec accepts, deferred masks or not, beside
 * unconstrained requests that are not touched; each sample has its own matcher, and every
 * matcher is freed however its request ends.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentScript } from '../testing/agentBundle.js';
import { GrammarWorkerLost } from './grammar/GrammarWorkerClient.js';
import type { GrammarSpec } from './grammar/grammarSpec.js';
import { GrammarService } from './grammar/GrammarService.js';
import type { GrammarBackend } from './grammar/maskedStep.js';
import { ServingEngine, type GenerateParams, type RequestHandle } from './ServingEngine.js';
import { ServingError } from './ServingError.js';
import { FakeEngine, type FakeEngineOptions } from './testing/FakeEngine.js';
import { qwenTokenizer, qwenTokenizerDir } from './testing/qwenTokenizer.js';
import { testServingOptions } from './testing/testServer.js';

const tok = await qwenTokenizer();
const EOS = 151_645;
const HELLO = 9707;
const greedy = { temperature: 0, topK: 0, topP: 1, seed: 0 };
let service: GrammarService;

beforeAll(async () => {
  service = new GrammarService({ script: await agentScript(), modelDir: qwenTokenizerDir(), vocabSize: 151_936, stopTokenIds: [EOS] });
}, 120_000);
afterAll(() => service?.close());

/** The service, counting matchers and advances; `failNextAdvance` makes the next advance reject. */
function spied(): { backend: GrammarBackend; counts: { opened: number; freed: number; advances: number }; failNextAdvance: (err: Error) => void } {
  const counts = { opened: 0, freed: 0, advances: 0 };
  let failing: Error | null = null;
  const backend: GrammarBackend = {
    wordsPerRow: service.wordsPerRow,
    compile: (spec) => service.compile(spec),
    newMatcher: (h) => (counts.opened++, service.newMatcher(h)),
    advance: (batch) => {
      counts.advances++;
      const err = failing;
      failing = null;
      return err ? Promise.reject(err) : service.advance(batch);
    },
    free: (m) => (counts.freed++, service.free(m)),
  };
  return { backend, counts, failNextAdvance: (err) => (failing = err) };
}

function serving(engine: FakeEngineOptions, backend: GrammarBackend | undefined = spied().backend): { serving: ServingEngine; engine: FakeEngine } {
  const fake = new FakeEngine(engine);
  return { serving: new ServingEngine(fake, tok, { ...testServingOptions, ...(backend ? { grammar: backend } : {}) }), engine: fake };
}

interface Outcome {
  text: string;
  ids: number[];
  finish: string | null;
  error: ServingError | null;
}

async function collect(h: RequestHandle, abortAfter?: number): Promise<Outcome> {
  const out: Outcome = { text: '', ids: [], finish: null, error: null };
  for await (const e of h.events) {
    if (e.type === 'delta') {
      out.text += e.text;
      out.ids.push(...e.tokenIds);
      if (abortAfter !== undefined && out.ids.length >= abortAfter) h.abort();
    } else if (e.type === 'done') out.finish = e.finishReason;
    else out.error = e.error;
  }
  return out;
}

const request = (over: Partial<GenerateParams> = {}): GenerateParams => ({ promptIds: tok.encode('Say hi'), sampling: greedy, maxTokens: 120, ...over });

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 10 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    ok: { type: 'boolean' },
    tags: { type: 'array', items: { enum: ['a', 'b'] }, maxItems: 2 },
  },
  required: ['name', 'age', 'ok', 'tags'],
};
const validPerson = new Ajv2020({ strict: false }).compile(person);
const personSpec = (anyWhitespace?: boolean): GrammarSpec => ({ type: 'json_schema', schema: person, param: 'response_format.json_schema.schema', ...(anyWhitespace === undefined ? {} : { anyWhitespace }) });

function expectPerson(o: Outcome): void {
  expect(o.error).toBeNull();
  expect(o.finish).toBe('stop');
  expect(validPerson(JSON.parse(o.text)), o.text).toBe(true);
}

describe('ServingEngine with a grammar', () => {
  it('constrained requests decode to JSON their schema accepts, with deferred masks and with masks in the plan', async () => {
    for (const deferredMasks of [true, false]) {
      const { serving: s, engine } = serving({ tokens: [HELLO], deferredMasks });
      const handles = await s.submitAllAsync([request({ grammar: personSpec() }), request({ grammar: personSpec(false) })]);
      const [anyWs, compact] = await Promise.all(handles.map((h) => collect(h)));
      expectPerson(anyWs!);
      expectPerson(compact!);
      expect(compact!.text).toMatch(/^\{"name": "/);
      expect(engine.maskedRows).toBeGreaterThan(10);
      expect(engine.provideTokenMask === undefined).toBe(!deferredMasks);
    }
  });

  it('mixes constrained and unconstrained requests in one batch; the unconstrained ones are untouched', async () => {
    const plain = await collect(serving({}).serving.submit(request({ maxTokens: 20 })));
    const { serving: s, engine } = serving({});
    const handles = await s.submitAllAsync([request({ maxTokens: 20 }), request({ grammar: personSpec(false) }), request({ maxTokens: 20 }), request({ grammar: { type: 'choice', choices: ['yes', 'no'], param: 'guided_choice' } })]);
    const outs = await Promise.all(handles.map((h) => collect(h)));
    expect(outs[0]).toEqual(plain);
    expect(outs[2]).toEqual(plain);
    expectPerson(outs[1]!);
    expect(['yes', 'no']).toContain(outs[3]!.text);
    // Only the sampled rows of constrained sequences took a mask row.
    const rows = engine.plans.map((p) => Array.from(p.extras?.maskRows ?? [])).filter((r) => r.length > 0);
    expect(rows.some((r) => r[0] === -1 && r[1] === 0 && r[2] === -1)).toBe(true);
  });

  it('n = 2: each sample has its own matcher and its own valid output', async () => {
    const { backend, counts } = spied();
    const { serving: s } = serving({ tokens: [HELLO, 1879] }, backend);
    const handles = await s.submitAllAsync([request({ n: 2, sampling: { temperature: 1, topK: 0, topP: 1, seed: 7 }, grammar: personSpec(false) })]);
    expect(handles).toHaveLength(2);
    const outs = await Promise.all(handles.map((h) => collect(h)));
    for (const o of outs) expectPerson(o);
    expect(counts.opened).toBe(2);
    expect(counts.freed).toBe(2);
  });

  it('preempted and recomputed sequences keep their grammar state (tokens are fed once)', async () => {
    const { serving: s } = serving({ tokens: [HELLO], numKvBlocks: 8, kvBlockSize: 16 });
    const handles = await s.submitAllAsync([0, 1, 2].map(() => request({ maxTokens: 100, grammar: personSpec(false) })));
    const outs = await Promise.all(handles.map((h) => collect(h)));
    for (const o of outs) expectPerson(o);
    expect(s.scheduler.numPreemptions).toBeGreaterThan(0);
  });

  it('frees every matcher: finished, aborted, and failed when the grammar worker is lost (other requests go on)', async () => {
    const { backend, counts, failNextAdvance } = spied();
    const { serving: s } = serving({ tokens: [HELLO], stepDelayMs: 2 }, backend);
    const [done, aborted] = await s.submitAllAsync([request({ grammar: personSpec(false) }), request({ grammar: personSpec(false) })]);
    const outs = await Promise.all([collect(done!), collect(aborted!, 3)]);
    expectPerson(outs[0]!);
    expect(outs[1]!.finish).toBe('abort');
    expect(counts).toMatchObject({ opened: 2, freed: 2 });

    const [lost, plain] = await s.submitAllAsync([request({ grammar: personSpec(false) }), request({ maxTokens: 8 })]);
    failNextAdvance(new GrammarWorkerLost('the grammar worker stopped (test)'));
    const [lostOut, plainOut] = await Promise.all([collect(lost!), collect(plain!)]);
    expect(lostOut.error).toMatchObject({ kind: 'engine_error', message: expect.stringMatching(/structured output failed: the grammar worker stopped \(test\)/) });
    expect(plainOut).toMatchObject({ finish: 'length', error: null });
    expect(plainOut.ids).toHaveLength(8);
    expect(counts).toMatchObject({ opened: 3, freed: 3 });
    expect(s.numActiveRequests).toBe(0);
  });

  it('min_tokens holds EOS back while the grammar can go on, not where it can only end; ignore_eos does not outlast the grammar', async () => {
    const prefersEos = { nextToken: () => EOS };
    const aPlus: GrammarSpec = { type: 'regex', pattern: 'a+', param: 'structured_outputs.regex' };
    const yes: GrammarSpec = { type: 'choice', choices: ['yes'], param: 'structured_outputs.choice' };
    const run = async (over: Partial<GenerateParams>): Promise<Outcome> => collect((await serving(prefersEos).serving.submitAllAsync([request(over)]))[0]!);
    expect(await run({ grammar: aPlus })).toMatchObject({ text: 'a', finish: 'stop' });
    const held = await run({ grammar: aPlus, minTokens: 3 });
    expect(held).toMatchObject({ text: 'aaa', finish: 'stop' });
    expect(held.ids).toHaveLength(4);
    expect(await run({ grammar: yes, minTokens: 5 })).toMatchObject({ text: 'yes', finish: 'stop' });
    expect(await run({ grammar: yes, ignoreEos: true })).toMatchObject({ text: 'yes', finish: 'stop' });
  });

  it('unconstrained traffic pays nothing: no mask rows, no advance', async () => {
    const { backend, counts } = spied();
    const { serving: s, engine } = serving({}, backend);
    await Promise.all(s.submitAll([request({ maxTokens: 5 }), request({ maxTokens: 5 })]).map((h) => collect(h)));
    expect(engine.plans.every((p) => p.extras === undefined)).toBe(true);
    expect(counts.advances).toBe(0);
  });

  it('a spec that cannot be used rejects the submission with a 400 naming it, and queues nothing', async () => {
    const { serving: s } = serving({});
    const bad: GrammarSpec = { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'strin' } } }, param: 'response_format.json_schema.schema' };
    await expect(s.submitAllAsync([request(), request({ grammar: bad })])).rejects.toMatchObject({ kind: 'invalid_request', param: 'response_format.json_schema.schema' });
    expect(s.numActiveRequests).toBe(0);
    expect(() => s.submitAll([request({ grammar: personSpec() })])).toThrow(/submitAllAsync/);
    const noService = new ServingEngine(new FakeEngine(), tok, testServingOptions);
    await expect(noService.submitAllAsync([request({ grammar: personSpec() })])).rejects.toMatchObject({ kind: 'invalid_request', param: 'response_format.json_schema.schema', message: expect.stringMatching(/not available on this server/) });
  });
});
