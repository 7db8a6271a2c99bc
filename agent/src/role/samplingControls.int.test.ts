/**
 * Logit bias, penalties, min_tokens and min_p on a real colocated role process (CPU, a tiny
 * random-weight checkpoint), through the openai client. Reported log-probabilities are the
 * log-softmax of the processed logits, so the difference lp(a) - lp(b) of two tokens of one
 * position is the difference of their processed logits: a penalty's exact size shows as
 * the change of that difference against the same request without it. Token X gets a +100
 * bias in the penalty cases, so every request samples X at every step (the same history
 * with and without the penalty) and X stays in the top list where its value can be read.
 */
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { testAddonBuilt } from '../testing/agentBundle.js';
import { completionPositions, type CompletionLogprobs, type Position } from '../testing/logprobPositions.js';
import { RoleProcess } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';
import type { VllmChatCompletion, VllmCompletionChoice, VllmFields } from '../testing/vllmFields.js';

const setup = useTinyModelSetup({ homePrefix: 'afd-sampling-int-', arch: 'qwen3_moe' });
const X = 9707;
/** The prompt holds X once: the repetition penalty counts prompt tokens, presence and frequency do not. */
const prompt = [X, 785, 3974, 13876, 38835];
const imEnd = 151645; // <|im_end|>, the checkpoint's EOS
const maxTokens = 6;

interface Sample {
  ids: number[];
  positions: Position[];
  finish: string;
  text: string;
  completionTokens: number;
}

describe.skipIf(!testAddonBuilt())('sampling controls on a real rank (CPU)', () => {
  let rank: RoleProcess;
  let client: OpenAI;

  beforeAll(async () => {
    rank = await RoleProcess.start({ role: 'colocated', model: setup.model, home: setup.home });
    client = new OpenAI({ baseURL: `${await rank.ready(120_000)}/v1`, apiKey: 'none', maxRetries: 0 });
  }, 180_000);

  /** A greedy completion of `prompt` with logprobs 5 and token ids; `extra` adds or overrides fields. */
  async function sample(extra: Partial<OpenAI.CompletionCreateParamsNonStreaming> & VllmFields = {}): Promise<Sample> {
    const r = await client.completions.create({ model: 'm', prompt, max_tokens: maxTokens, temperature: 0, logprobs: 5, ignore_eos: true, return_token_ids: true, return_tokens_as_token_ids: true, ...extra });
    const c = r.choices[0] as VllmCompletionChoice;
    return { ids: c.token_ids!, positions: completionPositions(c.logprobs as CompletionLogprobs), finish: c.finish_reason, text: c.text, completionTokens: r.usage!.completion_tokens };
  }

  /** lp(X) - lp(b) at every position, b the most likely token other than X that both samples list and the prompt lacks. */
  function gaps(plain: Sample, penalised: Sample): number[] {
    return plain.positions.map((p, t) => {
      const q = penalised.positions[t]!;
      const b = p.top.find(([id]) => id !== X && !prompt.includes(id) && q.top.some(([other]) => other === id));
      if (!b) throw new Error(`position ${t}: no token other than X in both top lists`);
      const lp = (pos: Position, id: number): number => pos.top.find(([other]) => other === id)![1];
      return lp(q, X) - lp(q, b[0]) - (lp(p, X) - lp(p, b[0]));
    });
  }

  it('a +100 logit bias makes every sampled token that token, greedy and sampled, chat and completions', async () => {
    for (const sampling of [{ temperature: 0 }, { temperature: 1, seed: 5 }]) {
      const s = await sample({ logit_bias: { [X]: 100 }, ...sampling });
      expect(s.ids).toEqual(new Array(maxTokens).fill(X));
      for (const p of s.positions) expect(p.logprob!).toBeGreaterThan(-1e-3); // X holds all the mass
    }
    const body: OpenAI.ChatCompletionCreateParamsNonStreaming & VllmFields = { model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, temperature: 1, seed: 9, logit_bias: { [X]: 100 }, ignore_eos: true, return_token_ids: true };
    const chat = (await client.chat.completions.create(body)) as VllmChatCompletion;
    expect(chat.choices[0]!.token_ids).toEqual([X, X, X, X]);
  });

  it('a -100 bias on the greedy token changes it; the other tokens keep their differences', async () => {
    const plain = await sample();
    const g = plain.ids[0]!;
    const banned = await sample({ logit_bias: { [g]: -100 } });
    expect(banned.ids[0]).not.toBe(g);
    const first = banned.positions[0]!;
    expect(first.top.some(([id]) => id === g)).toBe(false);
    // The new greedy token was the runner-up, and the bias moved nobody else.
    expect(banned.ids[0]).toBe(plain.positions[0]!.top.find(([id]) => id !== g)![0]);
    const [a, b] = first.top;
    const lp = (id: number): number => plain.positions[0]!.top.find(([other]) => other === id)?.[1] ?? NaN;
    expect(Math.abs(a![1] - b![1] - (lp(a![0]) - lp(b![0])))).toBeLessThan(1e-3);
  });

  it('frequency and presence penalties lower lp(X) - lp(b) by f * count and p once X is in the output (the prompt does not count)', async () => {
    const biased = { logit_bias: { [X]: 100 } };
    const plain = await sample(biased);
    const [freq, pres] = await Promise.all([sample({ ...biased, frequency_penalty: 1.5 }), sample({ ...biased, presence_penalty: 0.7 })]);
    expect(freq.ids).toEqual(plain.ids);
    gaps(plain, freq).forEach((d, t) => expect(Math.abs(d - -1.5 * t), `frequency, position ${t}: ${d}`).toBeLessThan(1e-3));
    gaps(plain, pres).forEach((d, t) => expect(Math.abs(d - (t === 0 ? 0 : -0.7)), `presence, position ${t}: ${d}`).toBeLessThan(1e-3));
    // Negative penalties raise it.
    const boosted = await sample({ ...biased, frequency_penalty: -0.5 });
    gaps(plain, boosted).forEach((d, t) => expect(Math.abs(d - 0.5 * t), `frequency -0.5, position ${t}`).toBeLessThan(1e-3));
  });

  it("the repetition penalty divides X's positive logit by r from the first step (X is in the prompt)", async () => {
    const biased = { logit_bias: { [X]: 100 } };
    const plain = await sample(biased);
    const [r2, r4] = await Promise.all([sample({ ...biased, repetition_penalty: 2 }), sample({ ...biased, repetition_penalty: 4 })]);
    // lp(X) - lp(b) drops by l(1 - 1/r), l = X's biased logit at that position: the same l for both r.
    // From the first position on: X is in the prompt.
    const l2 = gaps(plain, r2).map((d) => -d / (1 - 1 / 2));
    const l4 = gaps(plain, r4).map((d) => -d / (1 - 1 / 4));
    for (const [t, l] of l2.entries()) {
      expect(l, `position ${t}`).toBeGreaterThan(95); // 100 + a random model's small logit
      expect(l, `position ${t}`).toBeLessThan(105);
      expect(Math.abs(l - l4[t]!), `position ${t}: r = 2 gives ${l}, r = 4 gives ${l4[t]}`).toBeLessThan(1e-3);
    }
  });

  it('min_tokens bans EOS (and stop_token_ids) until that many tokens are out', async () => {
    const eos = { logit_bias: { [imEnd]: 100 }, ignore_eos: false };
    const early = await sample(eos);
    expect(early).toMatchObject({ ids: [imEnd], finish: 'stop', completionTokens: 1, text: '' });
    const held = await sample({ ...eos, min_tokens: 4 });
    expect(held.finish).toBe('stop');
    expect(held.ids).toHaveLength(5);
    expect(held.ids.at(-1)).toBe(imEnd);
    for (const p of held.positions.slice(0, 4)) expect(p.top.some(([id]) => id === imEnd)).toBe(false);
    // A stop token id waits for min_tokens too, and its text is left out.
    const stopAt = await sample({ logit_bias: { [X]: 100 }, stop_token_ids: [X], min_tokens: 3 });
    expect(stopAt).toMatchObject({ finish: 'stop', completionTokens: 4 });
    expect(stopAt.ids.slice(0, 3)).not.toContain(X);
  });

  it('min_p 1.0 keeps only the most likely token: sampled requests give the greedy tokens', async () => {
    const greedy = await sample();
    const seeded = await Promise.all([1, 2, 3].map((seed) => sample({ temperature: 1, seed, min_p: 1 })));
    for (const s of seeded) expect(s.ids).toEqual(greedy.ids);
    const free = await Promise.all([1, 2, 3].map((seed) => sample({ temperature: 1, seed })));
    expect(free.some((s) => s.ids.join() !== greedy.ids.join())).toBe(true);
  });

  it('stops with exit 0 and no KV block left', async () => {
    const stats = (await (await fetch(`${rank.apiUrl()}/afd/stats`)).json()) as { kv: { blocksUsed: number } };
    expect(stats.kv.blocksUsed).toBe(0);
    expect((await rank.stop()).code).toBe(0);
  });
});
