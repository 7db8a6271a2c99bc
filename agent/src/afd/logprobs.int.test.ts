/**
 * Log-probabilities across topologies, as real role processes on the CPU with a tiny
 * random-weight checkpoint: the same requests (chat with logprobs and top_logprobs 5,
 * completions with logprobs 3 and echo, prompt_logprobs; streamed and not; greedy and
 * seeded at temperature 0.8) sent at once to a colocated rank, to the attention rank of
 * 1A1F, and to both attention ranks of 2A2F with dual-batch overlap (low thresholds, so the
 * concurrent requests are split into two stages) give the same tokens, the same top-k ids
 * and the same values within 1e-4. On each rank a streamed request equals its
 * non-streamed twin.
 */
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { freePortBlock } from '@afd/native/ports';
import { testAddonBuilt } from '../testing/agentBundle.js';
import { chatPositions, completionPositions, expectSamePositions, promptPositions, type CompletionLogprobs, type Position } from '../testing/logprobPositions.js';
import { RoleProcess, startTopology, stopTopology } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';
import type { VllmChatCompletion, VllmCompletionChoice, VllmFields } from '../testing/vllmFields.js';

const setup = useTinyModelSetup({ homePrefix: 'afd-logprobs-int-', arch: 'qwen3_moe' });
const maxTokens = 6;
const messages = [{ role: 'user' as const, content: 'Tell me about the sea and the ships on it' }];
const prompt = 'The quick brown fox jumps over';
const samplings = { greedy: { temperature: 0 }, seeded: { temperature: 0.8, seed: 11 } };
/** vLLM's fields on top of OpenAI's. */
const vllm: VllmFields = { ignore_eos: true, return_tokens_as_token_ids: true };

/** What one request answered: its text and log-probabilities, in the neutral form. */
interface Answer {
  text: string;
  positions: Position[];
  prompt: Position[] | null;
}

/** Every request of the set, sent at once (so batches form and DBO splits them); answers by name. */
async function askAll(url: string): Promise<Map<string, Answer>> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  const jobs: [string, Promise<Answer>][] = Object.entries(samplings).flatMap(([name, s]) => {
    const chat: OpenAI.ChatCompletionCreateParamsNonStreaming & VllmFields = { model: 'm', messages, max_tokens: maxTokens, logprobs: true, top_logprobs: 5, ...s, ...vllm };
    const completion: OpenAI.CompletionCreateParamsNonStreaming & VllmFields = { model: 'm', prompt, max_tokens: maxTokens, logprobs: 3, echo: true, ...s, ...vllm };
    return [
      [`chat ${name}`, (async () => {
        const body: typeof chat = { ...chat, prompt_logprobs: 2, return_token_ids: true };
        const r = (await client.chat.completions.create(body)) as VllmChatCompletion;
        return { text: r.choices[0]!.message.content ?? '', positions: chatPositions(r.choices[0]!.logprobs?.content), prompt: promptPositions(r.prompt_logprobs!, r.prompt_token_ids!) };
      })()],
      [`chat ${name} streamed`, (async () => {
        const out: Answer = { text: '', positions: [], prompt: null };
        for await (const chunk of await client.chat.completions.create({ ...chat, stream: true })) {
          const c = chunk.choices[0];
          out.text += c?.delta.content ?? '';
          out.positions.push(...chatPositions(c?.logprobs?.content));
        }
        return out;
      })()],
      [`completions ${name}`, (async () => {
        const c = (await client.completions.create(completion)).choices[0]!;
        return { text: c.text, positions: completionPositions(c.logprobs as CompletionLogprobs), prompt: null };
      })()],
      [`completions ${name} streamed`, (async () => {
        const out: Answer = { text: '', positions: [], prompt: null };
        for await (const chunk of await client.completions.create({ ...completion, stream: true })) {
          out.text += chunk.choices[0]?.text ?? '';
          out.positions.push(...completionPositions(chunk.choices[0]?.logprobs as CompletionLogprobs | null));
        }
        return out;
      })()],
      [`prompt_logprobs ${name}`, (async () => {
        const body: typeof completion = { ...completion, echo: false, max_tokens: 3, logprobs: 2, prompt_logprobs: 4, return_token_ids: true };
        const c = (await client.completions.create(body)).choices[0] as VllmCompletionChoice;
        return { text: c.text, positions: completionPositions(c.logprobs as CompletionLogprobs), prompt: promptPositions(c.prompt_logprobs!, c.prompt_token_ids!) };
      })()],
    ];
  });
  const answers = await Promise.all(jobs.map(([, p]) => p));
  return new Map(jobs.map(([name], i) => [name, answers[i]!]));
}

/** Every answer equals the reference's: text, token ids, top-k ids, values within 1e-4. */
function expectSameAnswers(actual: Map<string, Answer>, reference: Map<string, Answer>, where: string): void {
  expect([...actual.keys()]).toEqual([...reference.keys()]);
  for (const [name, ref] of reference) {
    const a = actual.get(name)!;
    expect(a.text, `${where}, ${name}: text`).toBe(ref.text);
    expectSamePositions(a.positions, ref.positions, `${where}, ${name}`);
    if (ref.prompt) expectSamePositions(a.prompt ?? [], ref.prompt, `${where}, ${name} (prompt_logprobs)`);
  }
}

describe.skipIf(!testAddonBuilt())('log-probabilities across topologies (real processes, CPU)', () => {
  let reference: Map<string, Answer>;

  beforeAll(async () => {
    const rank = await RoleProcess.start({ role: 'colocated', model: setup.model, home: setup.home });
    reference = await askAll(await rank.ready(120_000));
    expect((await rank.stop()).code).toBe(0);
  }, 240_000);

  it('colocated: every answer is complete, and a streamed request equals its non-streamed twin', () => {
    for (const [name, a] of reference) {
      const generated = name.startsWith('prompt_logprobs') ? 3 : maxTokens;
      // Completions echo the prompt: its tokens come first, the first without a logprob.
      const echoed = a.positions.length - generated;
      expect(echoed, name).toBe(name.startsWith('completions') ? reference.get('prompt_logprobs greedy')!.prompt!.length : 0);
      if (echoed > 0) expect(a.positions[0]!.logprob, name).toBeNull();
      expect(a.positions.slice(echoed).every((p) => p.top.length >= (name.startsWith('chat') ? 5 : 2)), name).toBe(true);
    }
    for (const kind of ['chat', 'completions']) {
      for (const s of Object.keys(samplings)) {
        const plain = reference.get(`${kind} ${s}`)!;
        const streamed = reference.get(`${kind} ${s} streamed`)!;
        expect(streamed.text, `${kind} ${s}`).toBe(plain.text);
        expectSamePositions(streamed.positions, plain.positions, `${kind} ${s}: streamed vs not`, 0);
      }
    }
    // The seeded sample is not the greedy one (temperature 0.8 on a near-flat random model).
    expect(reference.get('chat seeded')!.positions.map((p) => p.id)).not.toEqual(reference.get('chat greedy')!.positions.map((p) => p.id));
    // Greedy picks the top token; prompt_logprobs have a row for every prompt token but the first.
    for (const p of reference.get('chat greedy')!.positions) expect(p.id).toBe(p.top[0]![0]);
    const promptRows = reference.get('prompt_logprobs greedy')!.prompt!;
    expect(promptRows[0]!.logprob).toBeNull();
    expect(promptRows.slice(1).every((p) => p.logprob !== null && p.top.length >= 4)).toBe(true);
  });

  it('1A1F: every answer equals the colocated one', { timeout: 240_000 }, async () => {
    const afdPort = await freePortBlock(1);
    const topo = await startTopology({ topology: '1A1F', afdPort, model: setup.model, home: setup.home });
    expectSameAnswers(await askAll(topo.attnUrls[0]!), reference, '1A1F');
    await stopTopology(topo.attn, topo.ffn);
  });

  it('2A2F with dual-batch overlap: both attention ranks answer as the colocated rank', { timeout: 300_000 }, async () => {
    const afdPort = await freePortBlock(2);
    const config = { stepDeadlineMs: 20_000, dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 2 } };
    const topo = await startTopology({ topology: '2A2F', afdPort, model: setup.model, home: setup.home, config });
    const [a0, a1] = await Promise.all(topo.attnUrls.map(askAll));
    expectSameAnswers(a0!, reference, '2A2F attention 0');
    expectSameAnswers(a1!, reference, '2A2F attention 1');
    // Hidden states crossed the wire in both DBO stages.
    const stats = (await (await fetch(`${topo.attnUrls[0]}/afd/stats`)).json()) as { a2fBytes: number[][]; kv: { blocksUsed: number } };
    expect(stats.a2fBytes[0]![1]).toBeGreaterThan(0);
    expect(stats.kv.blocksUsed).toBe(0);
    await stopTopology(topo.attn, topo.ffn);
  });
});
