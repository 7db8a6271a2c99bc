/**
 * Request bodies of the OpenAI API, validated with zod. Unknown fields are ignored (clients
 * send many); fields we cannot honour are rejected by name instead of silently ignored.
 * vLLM extensions: top_k, ignore_eos, stop_token_ids, chat_template_kwargs,
 * stream_options.continuous_usage_stats.
 */
import { z } from 'zod';

const stop = z.union([z.string(), z.array(z.string()).max(16)]).nullish();

/** Sampling and stop fields shared by both endpoints. */
const common = {
  /** Served model name (see GET /v1/models). */
  model: z.string().min(1),
  /** Most tokens to generate; default: up to the context window. */
  max_tokens: z.int().min(1).nullish(),
  /** 0 = greedy; default 1. */
  temperature: z.number().min(0).max(2).nullish(),
  /** Nucleus sampling mass in (0, 1]; default 1 (off). */
  top_p: z.number().gt(0).max(1).nullish(),
  /** Keep the k most likely tokens; 0 or -1 = off (vLLM extension). */
  top_k: z.int().min(-1).nullish(),
  /** Seed for reproducible sampling. */
  seed: z.int().nullish(),
  /** Strings that end generation (not included in the output). */
  stop,
  /** Token ids that end generation (vLLM extension). */
  stop_token_ids: z.array(z.int().min(0)).nullish(),
  /** Keep generating past EOS (vLLM extension, for benchmarks). */
  ignore_eos: z.boolean().nullish(),
  /** Stream with server-sent events. */
  stream: z.boolean().nullish(),
  stream_options: z
    .object({
      include_usage: z.boolean().nullish(),
      /** With include_usage: every chunk carries the usage so far, so a client that stops early keeps the counts (vLLM extension). */
      continuous_usage_stats: z.boolean().nullish(),
    })
    .nullish(),
  /** Completions per prompt (samples with seeds seed, seed + 1, ...; one prefill of the prompt). */
  n: z.int().min(1).nullish(),
  presence_penalty: z.number().nullish(),
  frequency_penalty: z.number().nullish(),
  logprobs: z.union([z.boolean(), z.int()]).nullish(),
  user: z.string().nullish(),
};

const tokenIds = z.array(z.int().min(0)).min(1);

export const completionRequestSchema = z.object({
  ...common,
  /**
   * Text or token ids, or a batch of either (an array of strings or of token-id arrays,
   * at most max-num-seqs of them): n choices per prompt, index = the prompt's place * n + the sample.
   */
  prompt: z.union([z.string(), z.array(z.string()).min(1), tokenIds, z.array(tokenIds).min(1)]),
  echo: z.boolean().nullish(),
  best_of: z.int().min(1).nullish(),
  suffix: z.string().nullish(),
});
export type CompletionRequest = z.infer<typeof completionRequestSchema>;

const textPart = z.object({ type: z.literal('text'), text: z.string() });

export const chatMessageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  /** Text, or text parts (other part types such as images are not supported). */
  content: z.union([z.string(), z.array(textPart)]).nullish(),
  name: z.string().nullish(),
});

export const chatRequestSchema = z.object({
  ...common,
  messages: z.array(chatMessageSchema).min(1, 'needs at least one message'),
  /** Newer name of max_tokens. */
  max_completion_tokens: z.int().min(1).nullish(),
  /** Extra chat-template variables, e.g. {"enable_thinking": false} (vLLM extension). */
  chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
  tools: z.array(z.unknown()).nullish(),
  top_logprobs: z.int().nullish(),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;
