/**
 * The OpenAI request body of a console chat (chat.start), without the streaming fields:
 * the service's ChatRunner sends it (adding `stream` and `stream_options`), and the
 * Playground shows it as curl and Python code, so what is shown is what is sent.
 */
import type { ChatStart } from '@afd/shared';
import type { ChatCompletionCreateParamsNonStreaming, CompletionCreateParamsNonStreaming } from 'openai/resources';

/** vLLM's extensions the agent's API implements. */
interface VllmSampling {
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
}

/** vLLM's chat-template fields (continuing the final assistant message). */
interface VllmChat {
  continue_final_message?: boolean;
  add_generation_prompt?: boolean;
}

export type ChatBody = ChatCompletionCreateParamsNonStreaming & VllmSampling & VllmChat;
export type CompletionBody = CompletionCreateParamsNonStreaming & VllmSampling;

export type OpenAiRequest = { path: '/v1/chat/completions'; body: ChatBody } | { path: '/v1/completions'; body: CompletionBody };

/** The body of `request` for `model`; optional fields appear only when set (sampling: only when not the API's default). */
export function openaiRequestBody(request: ChatStart, model: string): OpenAiRequest {
  const s = request.sampling;
  const sampling = {
    temperature: s.temperature,
    top_p: s.topP,
    max_tokens: s.maxTokens,
    ...(s.seed !== null ? { seed: s.seed } : {}),
    ...(s.topK > 0 ? { top_k: s.topK } : {}),
    ...(s.minP !== 0 ? { min_p: s.minP } : {}),
    ...(s.presencePenalty !== 0 ? { presence_penalty: s.presencePenalty } : {}),
    ...(s.frequencyPenalty !== 0 ? { frequency_penalty: s.frequencyPenalty } : {}),
    ...(s.repetitionPenalty !== 1 ? { repetition_penalty: s.repetitionPenalty } : {}),
    ...(s.stop.length > 0 ? { stop: s.stop } : {}),
  };
  const k = s.topLogprobs;
  if (request.mode === 'completion') return { path: '/v1/completions', body: { model, prompt: request.prompt, ...sampling, ...(k !== null ? { logprobs: k } : {}) } };
  const body: ChatBody = { model, messages: request.messages, ...sampling, ...(k !== null ? { logprobs: true, top_logprobs: k } : {}) };
  if (request.response_format) body.response_format = request.response_format;
  if (request.tools) body.tools = request.tools;
  if (request.tool_choice !== undefined) body.tool_choice = request.tool_choice;
  if (request.parallel_tool_calls !== undefined) body.parallel_tool_calls = request.parallel_tool_calls;
  if (request.continue_final_message !== undefined) body.continue_final_message = request.continue_final_message;
  if (request.add_generation_prompt !== undefined) body.add_generation_prompt = request.add_generation_prompt;
  return { path: '/v1/chat/completions', body };
}
