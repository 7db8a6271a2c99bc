/**
 * The look of /v1/chat/completions responses (chat.completion and chat.completion.chunk
 * objects): logprobs ({content: [...]}), vLLM's prompt_logprobs, return_token_ids and echo
 * (the last message's content before the reply when it has the reply's role), as vLLM
 * shapes them.
 */
import { chatLogprobs, promptLogprobsField, type TokenDisplay } from './logprobsFormat.js';
import type { ResponseOptions } from './requestParams.js';
import type { ChoiceDelta, FinishedChoice, OpenAiFinish, ResponseFormat, Usage } from './responseFormat.js';

export interface ChatShape {
  id: string;
  created: number;
  model: string;
  promptIds: readonly number[];
  /** Text echoed before the reply (vLLM chat echo), or ''. */
  echoText: string;
  /** Every chunk carries a usage key (stream_options.include_usage). */
  withUsage: boolean;
  opts: ResponseOptions;
  display: TokenDisplay;
}

export function chatFormat(s: ChatShape): ResponseFormat {
  const { id, created, model, opts } = s;
  const base = { id, object: 'chat.completion.chunk', created, model };
  const logprobs = (rows: ChoiceDelta['logprobs'] | null): object | null => (opts.logprobs !== undefined && rows ? chatLogprobs(rows, s.display) : null);
  const ids = (tokenIds: readonly number[]): object => (opts.returnTokenIds ? { token_ids: tokenIds } : {});
  return {
    everyToken: opts.logprobs !== undefined || opts.returnTokenIds,
    chunk(index: number, d: ChoiceDelta, finish: OpenAiFinish | null, first: boolean, usage: Usage | null): object {
      const content = (first ? s.echoText : '') + d.text;
      const delta = finish ? {} : first ? { role: 'assistant', content } : { content };
      return {
        ...base,
        choices: [{ index, delta, logprobs: logprobs(d.logprobs ?? null), finish_reason: finish, ...ids(d.tokenIds) }],
        ...(first && opts.returnTokenIds ? { prompt_token_ids: s.promptIds } : {}),
        ...(s.withUsage ? { usage } : {}),
      };
    },
    usageChunk: (usage: Usage) => ({ ...base, choices: [], usage }),
    full(choices: FinishedChoice[], usage: Usage): object {
      const first = choices[0];
      return {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: choices.map((c, index) => ({
          index,
          message: { role: 'assistant', content: s.echoText + c.text, refusal: null, tool_calls: [] },
          logprobs: logprobs(c.logprobs ?? []),
          finish_reason: c.finish,
          ...ids(c.tokenIds),
        })),
        usage,
        prompt_logprobs: opts.promptLogprobs !== undefined && first ? promptLogprobsField(first.promptLogprobs ?? [], s.display) : null,
        ...(opts.returnTokenIds ? { prompt_token_ids: s.promptIds } : {}),
      };
    },
  };
}
