/**
 * Request bodies of the OpenAI API, validated with zod: exactly the fields of the request
 * table (requestFields.ts; a test checks both ways). checkRequestFields runs first: it
 * refuses unknown fields and refused ones by name, so the refused and no-effect fields are
 * only typed loosely here.
 */
import { z } from 'zod';
import { MAX_TOP_LOGPROBS } from '@afd/shared';
import { messageToolCallSchema, toolsSchema } from './toolSchemas.js';

const stop = z.union([z.string(), z.array(z.string()).max(16)]).nullish();
/** Validated by checkRequestFields (refused unless neutral) or accepted without effect. */
const unchecked = z.unknown().optional();
const topK = z.int().min(0).max(MAX_TOP_LOGPROBS, `at most ${MAX_TOP_LOGPROBS} (OpenAI's and vLLM's limit)`);

/** Fields both endpoints share: sampling, stopping, streaming, vLLM's extras. */
const common = {
  /** Served model name (see GET /v1/models). */
  model: z.string().min(1),
  /** 0 = greedy; default 1. */
  temperature: z.number().min(0).max(2).nullish(),
  /** Nucleus sampling mass in (0, 1]; default 1 (off). */
  top_p: z.number().gt(0).max(1).nullish(),
  /** Keep the k most likely tokens; 0 or -1 = off (vLLM). */
  top_k: z.int().min(-1).nullish(),
  /** Drop tokens below min_p times the most likely one's probability; 0 = off (vLLM). */
  min_p: z.number().min(0).max(1).nullish(),
  /** Seed for reproducible sampling. */
  seed: z.int().nullish(),
  /** Strings that end generation (cut before them unless include_stop_str_in_output). */
  stop,
  /** Token ids that end generation (vLLM). */
  stop_token_ids: z.array(z.int().min(0)).nullish(),
  /** Keep the stop string / stop token text in the output (vLLM). */
  include_stop_str_in_output: z.boolean().nullish(),
  /** Keep generating past EOS (vLLM, for benchmarks). */
  ignore_eos: z.boolean().nullish(),
  /** At least this many tokens before EOS, a stop id or a stop string may end generation (vLLM). */
  min_tokens: z.int().min(0).nullish(),
  /** Leave special tokens out of the text; default true (vLLM). */
  skip_special_tokens: z.boolean().nullish(),
  /** Default true (vLLM). */
  spaces_between_special_tokens: z.boolean().nullish(),
  /** Subtracted once from every token already in the output (-2..2). */
  presence_penalty: z.number().min(-2).max(2).nullish(),
  /** Subtracted per occurrence of a token in the output (-2..2). */
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  /** Tokens of prompt and output: positive logits divided by it, negative ones multiplied; 1 = off (vLLM). */
  repetition_penalty: z.number().gt(0).nullish(),
  /** {"token id": bias in -100..100}, added to the token's logit. */
  logit_bias: z.record(z.string().regex(/^(0|[1-9]\d*)$/, 'keys are token ids (non-negative integers as strings)'), z.number().min(-100).max(100)).nullish(),
  /** Top log-probabilities of each prompt token (vLLM; not with stream). */
  prompt_logprobs: topK.nullish(),
  /** Logprob tokens as "token_id:<id>" (vLLM). */
  return_tokens_as_token_ids: z.boolean().nullish(),
  /** prompt_token_ids and token_ids in the response (vLLM). */
  return_token_ids: z.boolean().nullish(),
  /** Keep only this many prompt tokens (vLLM). */
  truncate_prompt_tokens: z.int().min(1).nullish(),
  /** Which end truncate_prompt_tokens keeps: left = the last tokens (default), right = the first (vLLM). */
  truncation_side: z.enum(['left', 'right']).nullish(),
  /** The response id's suffix (vLLM). */
  request_id: z.string().min(1).nullish(),
  /** Stream with server-sent events. */
  stream: z.boolean().nullish(),
  stream_options: z
    .strictObject({
      include_usage: z.boolean().nullish(),
      /** With include_usage: every chunk carries the usage so far, so a client that stops early keeps the counts (vLLM). */
      continuous_usage_stats: z.boolean().nullish(),
      /** OpenAI pads chunks against side channels when true; this server never pads, so only false is accepted. */
      include_obfuscation: z.literal(false, 'this server does not pad stream chunks; omit it or send false').nullish(),
    })
    .nullish(),
  /** Completions per prompt (samples with seeds seed, seed + 1, ...; one prefill of the prompt). */
  n: z.int().min(1).nullish(),
  /** Echo the prompt (completions) or the last message (chat, vLLM) before the output. */
  echo: z.boolean().nullish(),
  user: z.string().nullish(),
  session_id: z.string().nullish(),
  cache_salt: z.string().min(1).max(1024).nullish(),
  response_format: unchecked,
  use_beam_search: unchecked,
  length_penalty: unchecked,
  watermarking: unchecked,
  allowed_token_ids: unchecked,
  bad_words: unchecked,
  logprob_token_ids: unchecked,
  add_special_tokens: unchecked,
  structured_outputs: unchecked,
  guided_json: unchecked,
  guided_regex: unchecked,
  guided_choice: unchecked,
  guided_grammar: unchecked,
  guided_decoding_backend: unchecked,
  guided_whitespace_pattern: unchecked,
  thinking_token_budget: unchecked,
  priority: unchecked,
  logits_processors: unchecked,
  kv_transfer_params: unchecked,
  ec_transfer_params: unchecked,
  vllm_xargs: unchecked,
  repetition_detection: unchecked,
  stream_interval: unchecked,
  routed_experts_prompt_start: unchecked,
  return_token_offsets: unchecked,
  return_mm_kwargs: unchecked,
};

const tokenIds = z.array(z.int().min(0)).min(1);

export const completionRequestSchema = z.object({
  ...common,
  /**
   * Text or token ids, or a batch of either (an array of strings or of token-id arrays,
   * at most max-num-seqs of them): n choices per prompt, index = the prompt's place * n + the sample.
   */
  prompt: z.union([z.string(), z.array(z.string()).min(1), tokenIds, z.array(tokenIds).min(1)]),
  /** Most tokens to generate; default: up to the context window; 0 only with echo. */
  max_tokens: z.int().min(0).nullish(),
  /** Top log-probabilities per token, 0..20 (0: the chosen token's only). */
  logprobs: topK.nullish(),
  best_of: unchecked,
  suffix: unchecked,
  prompt_embeds: unchecked,
});
export type CompletionRequest = z.infer<typeof completionRequestSchema>;

const textPart = z.strictObject({ type: z.literal('text'), text: z.string() });

/** A message; other fields are refused by name (none is accepted and ignored). */
export const chatMessageSchema = z
  .strictObject({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    /** Text, or text parts (other part types such as images are not supported); null for an assistant message of tool calls. */
    content: z.union([z.string(), z.array(textPart)]).nullish(),
    name: z.string().nullish(),
    /** An assistant message sent back as this server returned it: only the neutral values. */
    refusal: z.null('a refusal in a message is not supported; leave it out or send null').optional(),
    /** Assistant: the calls it made (arguments as JSON text). */
    tool_calls: z.array(messageToolCallSchema).nullish(),
    /** Tool: the id of the call this message answers. */
    tool_call_id: z.string().min(1).nullish(),
  })
  .superRefine((m, ctx) => {
    if (m.tool_calls && m.tool_calls.length > 0 && m.role !== 'assistant') ctx.addIssue({ code: 'custom', path: ['tool_calls'], message: 'only assistant messages carry tool_calls' });
    if (m.role === 'tool' && !m.tool_call_id) ctx.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'a tool message needs the tool_call_id of the call it answers' });
    if (m.role !== 'tool' && m.tool_call_id) ctx.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'only tool messages carry a tool_call_id' });
  });

export const chatRequestSchema = z.object({
  ...common,
  messages: z.array(chatMessageSchema).min(1, 'needs at least one message'),
  /** Most tokens to generate; default: up to the context window. */
  max_tokens: z.int().min(1).nullish(),
  /** Newer name of max_tokens (wins over it). */
  max_completion_tokens: z.int().min(1).nullish(),
  /** Log-probabilities of the generated tokens. */
  logprobs: z.boolean().nullish(),
  /** Top tokens per position with logprobs: true (0..20). */
  top_logprobs: topK.nullish(),
  /** Extra chat-template variables, e.g. {"enable_thinking": false} (vLLM). */
  chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
  /** Render the assistant turn start after the messages; default true (vLLM). */
  add_generation_prompt: z.boolean().nullish(),
  /** Continue the final assistant message instead of starting a new one; default false, needs add_generation_prompt false (vLLM). */
  continue_final_message: z.boolean().nullish(),
  /** false: at most one tool call (default true). */
  parallel_tool_calls: z.boolean().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  prompt_cache_key: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  prompt_cache_retention: unchecked,
  prompt_cache_options: unchecked,
  /** Functions the model may call. */
  tools: toolsSchema.nullish(),
  /** "none", "auto", "required" or a named function; checked by toolChoiceOf (toolSchemas.ts). */
  tool_choice: unchecked,
  functions: unchecked,
  function_call: unchecked,
  audio: unchecked,
  modalities: unchecked,
  prediction: unchecked,
  store: unchecked,
  service_tier: unchecked,
  reasoning_effort: unchecked,
  verbosity: unchecked,
  web_search_options: unchecked,
  moderation: unchecked,
  documents: unchecked,
  chat_template: unchecked,
  mm_processor_kwargs: unchecked,
  media_io_kwargs: unchecked,
  structural_tag: unchecked,
  include_reasoning: unchecked,
  return_prompt_text: unchecked,
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;
