/**
 * The look of /v1/completions responses (text_completion objects), streamed and not: echo
 * (the prompt's text before the completion; with logprobs its tokens too, the first one
 * null), logprobs, vLLM's prompt_logprobs and return_token_ids, the way vLLM shapes them.
 */
import { completionLogprobs, promptLogprobsField, promptTokens, type CompletionToken, type TokenDisplay } from './logprobsFormat.js';
import type { ResponseOptions } from './requestParams.js';
import type { ChoiceDelta, FinishedChoice, OpenAiFinish, ResponseFormat, Usage } from './responseFormat.js';

/** One choice's prompt. */
export interface ChoicePrompt {
  ids: readonly number[];
  /** The prompt as text (decoded when it came as token ids). */
  text: string;
}

export interface CompletionsShape {
  id: string;
  created: number;
  model: string;
  /** Choice i's prompt (prompt i's n choices share it). */
  prompts: readonly ChoicePrompt[];
  echo: boolean;
  /** max_tokens 0 with echo: the prompt alone (the one token generated is dropped). */
  echoOnly: boolean;
  /** Every chunk carries a usage key (stream_options.include_usage). */
  withUsage: boolean;
  opts: ResponseOptions;
  display: TokenDisplay;
}

/** A choice's generated tokens with their rows (rows missing when not asked). */
const generated = (ids: readonly number[], rows: ChoiceDelta['logprobs'] | null): CompletionToken[] => ids.map((tokenId, j) => ({ tokenId, row: rows?.[j] ?? null }));

export function completionsFormat(s: CompletionsShape): ResponseFormat {
  const { id, created, model, opts } = s;
  /** Characters sent so far per choice (the streamed text_offset's start). */
  const sentChars: number[] = [];
  /** The echoed prompt text (vLLM leaves it out with return_token_ids). */
  const echoText = (i: number): string => (s.echo && !opts.returnTokenIds ? s.prompts[i]!.text : '');

  /** Text, logprobs and token ids of choice i: the echoed prompt (when `withPrompt`) and the generated part. */
  const body = (i: number, withPrompt: boolean, text: string, ids: readonly number[], rows: ChoiceDelta['logprobs'] | null, promptRows: ChoiceDelta['promptLogprobs'] | null, firstOffset: number): object => {
    const gen = s.echoOnly ? [] : generated(ids, rows);
    const tokens = withPrompt && s.echo ? [...promptTokens(s.prompts[i]!.ids, promptRows ?? null), ...gen] : gen;
    const out: Record<string, unknown> = {
      index: i,
      text: (withPrompt ? echoText(i) : '') + (s.echoOnly ? '' : text),
      logprobs: opts.logprobs !== undefined && tokens.length > 0 ? completionLogprobs(tokens, s.display, firstOffset) : null,
    };
    if (opts.returnTokenIds) {
      if (withPrompt) out.prompt_token_ids = s.prompts[i]!.ids;
      out.token_ids = s.echoOnly ? [] : ids;
    }
    return out;
  };

  return {
    everyToken: opts.logprobs !== undefined || opts.returnTokenIds,
    chunk(i: number, delta: ChoiceDelta, finish: OpenAiFinish | null, first: boolean, usage: Usage | null): object {
      const choice = body(i, first, delta.text, delta.tokenIds, delta.logprobs ?? null, delta.promptLogprobs ?? null, sentChars[i] ?? 0);
      sentChars[i] = (sentChars[i] ?? 0) + [...(choice as { text: string }).text].length;
      return { id, object: 'text_completion', created, model, choices: [{ ...choice, finish_reason: finish }], ...(s.withUsage ? { usage } : {}) };
    },
    usageChunk: (usage: Usage) => ({ id, object: 'text_completion', created, model, choices: [], usage }),
    full: (choices: FinishedChoice[], usage: Usage): object => ({
      id,
      object: 'text_completion',
      created,
      model,
      usage,
      choices: choices.map((c, i) => ({
        ...body(i, true, c.text, c.tokenIds, c.logprobs, c.promptLogprobs, 0),
        finish_reason: c.finish,
        prompt_logprobs: opts.promptLogprobs !== undefined ? promptLogprobsField(c.promptLogprobs ?? [], s.display) : null,
      })),
    }),
  };
}
