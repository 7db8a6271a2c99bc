/**
 * The look of /v1/chat/completions responses (chat.completion and chat.completion.chunk
 * objects): logprobs ({content: [...]}), vLLM's prompt_logprobs, return_token_ids and echo
 * (the last message's content before the reply when it has the reply's role), as vLLM
 * shapes them; with tools, the output read as content and tool calls (chatToolCalls.ts).
 */
import { chatLogprobs, promptLogprobsField, type TokenDisplay } from './logprobsFormat.js';
import type { ResponseOptions } from './requestParams.js';
import type { ChoiceDelta, FinishedChoice, OpenAiFinish, ResponseFormat, Usage } from './responseFormat.js';
import { ChatToolStreams, toolMessage, type ChatToolOutput } from './chatToolCalls.js';

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
  /** How the output is read for tool calls; absent or null = plain content. */
  tools?: ChatToolOutput | null;
}

export function chatFormat(s: ChatShape): ResponseFormat {
  const { id, created, model, opts } = s;
  const base = { id, object: 'chat.completion.chunk', created, model };
  const logprobs = (rows: ChoiceDelta['logprobs'] | null): object | null => (opts.logprobs !== undefined && rows ? chatLogprobs(rows, s.display) : null);
  const ids = (tokenIds: readonly number[]): object => (opts.returnTokenIds ? { token_ids: tokenIds } : {});
  const streams = s.tools ? new ChatToolStreams(s.tools) : null;
  const chunkOf = (index: number, delta: object, d: ChoiceDelta, finish: OpenAiFinish | null, first: boolean, usage: Usage | null): object => ({
    ...base,
    choices: [{ index, delta, logprobs: logprobs(d.logprobs ?? null), finish_reason: finish, ...ids(d.tokenIds) }],
    ...(first && opts.returnTokenIds ? { prompt_token_ids: s.promptIds } : {}),
    ...(s.withUsage ? { usage } : {}),
  });
  const everyToken = opts.logprobs !== undefined || opts.returnTokenIds;
  return {
    everyToken,
    chunk(index: number, d: ChoiceDelta, finish: OpenAiFinish | null, first: boolean, usage: Usage | null): object | object[] | null {
      const echo = first ? s.echoText : '';
      if (!streams) {
        const content = echo + d.text;
        return chunkOf(index, finish ? {} : first ? { role: 'assistant', content } : { content }, d, finish, first, usage);
      }
      const role = first ? { role: 'assistant' } : {};
      if (!finish) {
        const delta = streams.push(index, d.text, echo);
        if (!delta && !first && !everyToken) return null;
        return chunkOf(index, { ...role, ...delta }, d, null, first, usage);
      }
      const { delta, finish: reason } = streams.finish(index, echo, finish);
      const last = chunkOf(index, {}, d, reason, first && !delta, usage);
      return delta ? [chunkOf(index, { ...role, ...delta }, { text: '', tokenIds: [] }, null, first, usage), last] : last;
    },
    usageChunk: (usage: Usage) => ({ ...base, choices: [], usage }),
    full(choices: FinishedChoice[], usage: Usage): object {
      const first = choices[0];
      return {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: choices.map((c, index) => {
          const { message, finish } = s.tools ? toolMessage(s.tools, s.echoText, c.text, c.finish) : { message: { role: 'assistant', content: s.echoText + c.text, refusal: null, tool_calls: [] }, finish: c.finish };
          return { index, message, logprobs: logprobs(c.logprobs ?? []), finish_reason: finish, ...ids(c.tokenIds) };
        }),
        usage,
        prompt_logprobs: opts.promptLogprobs !== undefined && first ? promptLogprobsField(first.promptLogprobs ?? [], s.display) : null,
        ...(opts.returnTokenIds ? { prompt_token_ids: s.promptIds } : {}),
      };
    },
  };
}
