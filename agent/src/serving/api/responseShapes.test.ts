/**
 * The response shapes of log-probabilities, echo, prompt_logprobs and return_token_ids, for
 * chat and completions, streamed and not, from hand-made rows (no engine, no server).
 */
import { describe, expect, it } from 'vitest';
import type { TokenLogprob } from '../scheduler/logprobRows.js';
import { chatFormat } from './chatResponse.js';
import { completionsFormat, type CompletionsShape } from './completionsResponse.js';
import { chatLogprobs, completionLogprobs, promptLogprobsField, type TokenDisplay } from './logprobsFormat.js';
import type { ResponseOptions } from './requestParams.js';
import { usageOf, type FinishedChoice } from './responseFormat.js';

const strings: Record<number, string> = { 1: 'A', 2: ' b', 3: '😀', 4: 'c', 5: '<|im_end|>' };
const display: TokenDisplay = { tokenString: (id) => strings[id] ?? `?${id}`, asIds: false };
const row = (tokenId: number, logprob: number, rank: number, top: [number, number][]): TokenLogprob => ({ tokenId, logprob, rank, top: top.map(([t, lp]) => ({ tokenId: t, logprob: lp })) });
const opts = (over: Partial<ResponseOptions> = {}): ResponseOptions => ({ tokensAsIds: false, returnTokenIds: false, logprobs: undefined, promptLogprobs: undefined, ...over });

describe('logprob shapes', () => {
  it('chat: token, logprob, UTF-8 bytes and the top k; -Infinity as -9999; token ids on request', () => {
    const r = row(3, -0.5, 2, [[4, -0.2], [3, -0.5]]);
    expect(chatLogprobs([r, row(1, -Infinity, 9, [])], display)).toEqual({
      content: [
        { token: '😀', logprob: -0.5, bytes: [240, 159, 152, 128], top_logprobs: [{ token: 'c', logprob: -0.2, bytes: [99] }, { token: '😀', logprob: -0.5, bytes: [240, 159, 152, 128] }] },
        { token: 'A', logprob: -9999, bytes: [65], top_logprobs: [] },
      ],
    });
    expect(chatLogprobs([r], { ...display, asIds: true }).content[0]).toMatchObject({ token: 'token_id:3', top_logprobs: [{ token: 'token_id:4' }, { token: 'token_id:3' }] });
  });

  it('completions: the chosen token then the top k, each once; null rows; text offsets in characters', () => {
    const out = completionLogprobs(
      [
        { tokenId: 1, row: null },
        { tokenId: 3, row: row(3, -1, 3, [[4, -0.1], [2, -0.7]]) },
        { tokenId: 4, row: row(4, -0.1, 1, [[4, -0.1]]) },
      ],
      display,
      10,
    );
    expect(out).toEqual({
      tokens: ['A', '😀', 'c'],
      token_logprobs: [null, -1, -0.1],
      top_logprobs: [null, { '😀': -1, c: -0.1, ' b': -0.7 }, { c: -0.1 }],
      text_offset: [10, 11, 12],
    });
  });

  it("prompt_logprobs: vLLM's per-position dicts, the first null, the prompt token with its rank", () => {
    expect(promptLogprobsField([row(2, -3, 4, [[4, -0.1]]), row(4, -0.1, 1, [[4, -0.1]])], display)).toEqual([
      null,
      { '2': { logprob: -3, rank: 4, decoded_token: ' b' }, '4': { logprob: -0.1, rank: 1, decoded_token: 'c' } },
      { '4': { logprob: -0.1, rank: 1, decoded_token: 'c' } },
    ]);
  });
});

const promptRows = [row(2, -2, 2, [[4, -1]])]; // prompt [1, 2]: the row of token 2
const finished = (over: Partial<FinishedChoice> = {}): FinishedChoice => ({ text: 'c<', finish: 'stop', tokenIds: [4, 5], logprobs: [row(4, -0.1, 1, []), row(5, -2, 3, [])], promptLogprobs: promptRows, ...over });

describe('completions responses', () => {
  const shape = (over: Partial<CompletionsShape>): CompletionsShape => ({ id: 'cmpl-1', created: 1, model: 'm', prompts: [{ ids: [1, 2], text: 'A b' }], echo: false, echoOnly: false, withUsage: false, opts: opts(), display, ...over });

  it('echo with logprobs: prompt text and tokens first (the first null), then the completion; prompt_logprobs on request', () => {
    const fmt = completionsFormat(shape({ echo: true, opts: opts({ logprobs: 0, promptLogprobs: 0 }) }));
    const body = fmt.full([finished()], usageOf(2, 2)) as { choices: { text: string; logprobs: { tokens: string[]; token_logprobs: unknown[]; text_offset: number[] }; prompt_logprobs: unknown[] }[] };
    const c = body.choices[0]!;
    expect(c.text).toBe('A bc<');
    expect(c.logprobs.tokens).toEqual(['A', ' b', 'c', '<|im_end|>']);
    expect(c.logprobs.token_logprobs).toEqual([null, -2, -0.1, -2]);
    expect(c.logprobs.text_offset).toEqual([0, 1, 3, 4]);
    expect(c.prompt_logprobs).toHaveLength(2);
  });

  it('echo with max_tokens 0: the prompt alone; echo with return_token_ids: no prompt text (as vLLM), the ids instead', () => {
    const only = completionsFormat(shape({ echo: true, echoOnly: true, opts: opts({ logprobs: 0 }) })).full([finished()], usageOf(2, 1)) as { choices: { text: string; logprobs: { tokens: string[] } }[] };
    expect(only.choices[0]).toMatchObject({ text: 'A b', logprobs: { tokens: ['A', ' b'] } });
    const ids = completionsFormat(shape({ echo: true, opts: opts({ returnTokenIds: true }) })).full([finished()], usageOf(2, 2)) as { choices: object[] };
    expect(ids.choices[0]).toMatchObject({ text: 'c<', prompt_token_ids: [1, 2], token_ids: [4, 5], logprobs: null, prompt_logprobs: null });
  });

  it('streamed: the first chunk echoes the prompt; text_offset goes on from the text already sent; the finish chunk has no logprobs', () => {
    const fmt = completionsFormat(shape({ echo: true, opts: opts({ logprobs: 0, returnTokenIds: true }) }));
    expect(fmt.everyToken).toBe(true);
    const first = fmt.chunk(0, { text: 'c', tokenIds: [4], logprobs: [row(4, -0.1, 1, [])], promptLogprobs: promptRows }, null, true, null) as { choices: { text: string; logprobs: { tokens: string[]; text_offset: number[] }; prompt_token_ids: number[]; token_ids: number[] }[] };
    expect(first.choices[0]).toMatchObject({ text: 'c', logprobs: { tokens: ['A', ' b', 'c'], text_offset: [0, 1, 3] }, prompt_token_ids: [1, 2], token_ids: [4], finish_reason: null });
    const second = fmt.chunk(0, { text: '😀', tokenIds: [3], logprobs: [row(3, -1, 2, [])] }, null, false, null) as { choices: { logprobs: { text_offset: number[] } }[] };
    expect(second.choices[0]!.logprobs.text_offset).toEqual([1]);
    const last = fmt.chunk(0, { text: '', tokenIds: [] }, 'length', false, null) as { choices: object[] };
    expect(last.choices[0]).toMatchObject({ text: '', logprobs: null, token_ids: [], finish_reason: 'length' });
  });
});

describe('chat responses', () => {
  const shape = { id: 'chatcmpl-1', created: 1, model: 'm', promptIds: [1, 2], echoText: '', withUsage: false, display };

  it('logprobs content, prompt_logprobs at the top level, token ids on request', () => {
    const body = chatFormat({ ...shape, opts: opts({ logprobs: 1, promptLogprobs: 0, returnTokenIds: true }) }).full([finished()], usageOf(2, 2));
    expect(body).toMatchObject({
      object: 'chat.completion',
      choices: [{ message: { role: 'assistant', content: 'c<' }, logprobs: { content: [{ token: 'c' }, { token: '<|im_end|>' }] }, token_ids: [4, 5] }],
      prompt_logprobs: [null, { '2': { rank: 2 }, '4': { rank: 1 } }],
      prompt_token_ids: [1, 2],
    });
    const plain = chatFormat({ ...shape, opts: opts() }).full([finished()], usageOf(2, 2)) as Record<string, unknown>;
    expect(plain).toMatchObject({ choices: [{ logprobs: null }], prompt_logprobs: null });
    expect(plain).not.toHaveProperty('prompt_token_ids');
  });

  it('streamed: the first chunk carries the role, the echoed text and the prompt ids; each chunk its logprobs', () => {
    const fmt = chatFormat({ ...shape, echoText: 'So: ', opts: opts({ logprobs: 0, returnTokenIds: true }) });
    const first = fmt.chunk(0, { text: 'c', tokenIds: [4], logprobs: [row(4, -0.1, 1, [])] }, null, true, null);
    expect(first).toMatchObject({ object: 'chat.completion.chunk', prompt_token_ids: [1, 2], choices: [{ delta: { role: 'assistant', content: 'So: c' }, logprobs: { content: [{ token: 'c', logprob: -0.1 }] }, token_ids: [4] }] });
    const next = fmt.chunk(0, { text: '', tokenIds: [3], logprobs: [row(3, -1, 1, [])] }, null, false, null);
    expect(next).toMatchObject({ choices: [{ delta: { content: '' }, logprobs: { content: [{ token: '😀' }] } }] });
    expect(next).not.toHaveProperty('prompt_token_ids');
  });
});
