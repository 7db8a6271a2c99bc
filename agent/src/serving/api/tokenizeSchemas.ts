/**
 * Request bodies of vLLM's /tokenize and /detokenize (vllm/entrypoints/openai/protocol.py:
 * TokenizeCompletionRequest, TokenizeChatRequest, DetokenizeRequest), validated with zod.
 * Unknown fields are refused by name (a 400), as on the OpenAI routes.
 */
import { z } from 'zod';
import { chatMessageSchema } from './schemas.js';
import { toolsSchema } from './toolSchemas.js';

/** Served model name; optional here (vLLM): when given it must be the served one. */
const model = z.string().min(1).nullish();
/** Also return each token's vocabulary string (e.g. "Ġworld"). */
const returnTokenStrs = z.boolean().nullish();

export const tokenizePromptSchema = z.strictObject({
  model,
  prompt: z.string(),
  /** Add the tokenizer's special tokens, e.g. BOS (default true). */
  add_special_tokens: z.boolean().nullish(),
  return_token_strs: returnTokenStrs,
});

export const tokenizeChatSchema = z.strictObject({
  model,
  messages: z.array(chatMessageSchema).min(1, 'needs at least one message'),
  /** End with the template's assistant header, as a chat completion does (default true). */
  add_generation_prompt: z.boolean().nullish(),
  /** End at the last message's content so the model continues it (default false; not with add_generation_prompt). */
  continue_final_message: z.boolean().nullish(),
  /** Add the tokenizer's special tokens to the rendered chat (default false: the template has them). */
  add_special_tokens: z.boolean().nullish(),
  /** Extra chat-template variables, e.g. {"enable_thinking": false}. */
  chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
  return_token_strs: returnTokenStrs,
  /** A template of the request's own: not accepted (the model's template is used). */
  chat_template: z.string().nullish(),
  /** Functions the chat template lists (as chat completions pass them). */
  tools: toolsSchema.nullish(),
});

export const detokenizeSchema = z.strictObject({
  model,
  /** Token ids to turn back into text. */
  tokens: z.array(z.int()),
});

export type TokenizePromptRequest = z.infer<typeof tokenizePromptSchema>;
export type TokenizeChatRequest = z.infer<typeof tokenizeChatSchema>;
export type DetokenizeRequest = z.infer<typeof detokenizeSchema>;
