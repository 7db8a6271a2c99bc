/**
 * The OpenAI request body of a console chat (chat.start), without the streaming fields:
 * the service's ChatRunner sends it (adding `stream` and `stream_options`), and the
 * Playground shows it as curl and Python code, so what is shown is what is sent.
 */
import type { ChatStart } from '@afd/shared';
import type { ChatCompletionCreateParamsNonStreaming, CompletionCreateParamsNonStreaming } from 'openai/resources';

/** vLLM's extension the agent's API implements. */
interface VllmSampling {
  top_k?: number;
}

export type ChatBody = ChatCompletionCreateParamsNonStreaming & VllmSampling;
export type CompletionBody = CompletionCreateParamsNonStreaming & VllmSampling;

export type OpenAiRequest = { path: '/v1/chat/completions'; body: ChatBody } | { path: '/v1/completions'; body: CompletionBody };

/** The body of `request` for `model`; optional fields appear only when set. */
export function openaiRequestBody(request: ChatStart, model: string): OpenAiRequest {
  const s = request.sampling;
  const sampling = {
    temperature: s.temperature,
    top_p: s.topP,
    max_tokens: s.maxTokens,
    ...(s.seed !== null ? { seed: s.seed } : {}),
    ...(s.topK > 0 ? { top_k: s.topK } : {}),
  };
  if (request.mode === 'completion') return { path: '/v1/completions', body: { model, prompt: request.prompt, ...sampling } };
  const body: ChatBody = { model, messages: request.messages, ...sampling };
  if (request.response_format) body.response_format = request.response_format;
  if (request.tools) body.tools = request.tools;
  if (request.tool_choice !== undefined) body.tool_choice = request.tool_choice;
  if (request.parallel_tool_calls !== undefined) body.parallel_tool_calls = request.parallel_tool_calls;
  return { path: '/v1/chat/completions', body };
}
