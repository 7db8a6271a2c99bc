/**
 * Test helper: vLLM's request and response fields that the `openai` npm client does not
 * type. The client sends a request's extra fields as they are and keeps a response's extra
 * keys, so a test types its bodies as `OpenAI.XCreateParams & VllmFields` and reads
 * responses through the types below.
 */
import type OpenAI from 'openai';
import type { PromptLogprobsEntry } from './logprobPositions.js';

/** vLLM's fields of chat and completions requests (docs/api.md, "Request parameters"). */
export interface VllmFields {
  ignore_eos?: boolean;
  min_tokens?: number;
  min_p?: number;
  top_k?: number;
  repetition_penalty?: number;
  stop_token_ids?: number[];
  include_stop_str_in_output?: boolean;
  prompt_logprobs?: number;
  return_tokens_as_token_ids?: boolean;
  return_token_ids?: boolean;
  truncate_prompt_tokens?: number;
  truncation_side?: 'left' | 'right';
  add_generation_prompt?: boolean;
  continue_final_message?: boolean;
  echo?: boolean;
  cache_salt?: string;
  use_beam_search?: boolean;
  structured_outputs?: unknown;
}

/** vLLM's keys on a completions choice. */
export type VllmCompletionChoice = OpenAI.CompletionChoice & { prompt_logprobs?: PromptLogprobsEntry[] | null; prompt_token_ids?: number[]; token_ids?: number[] };

/** vLLM's keys on a chat completion (prompt ones at the top, token ids on each choice). */
export type VllmChatCompletion = OpenAI.ChatCompletion & { prompt_logprobs?: PromptLogprobsEntry[] | null; prompt_token_ids?: number[]; choices: { token_ids?: number[] }[] };
