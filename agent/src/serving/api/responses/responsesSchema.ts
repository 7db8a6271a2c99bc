/**
 * The body of POST /v1/responses, validated with zod: exactly the fields of the table in
 * responseFields.ts (a test checks both ways). checkResponseFields and checkResponseValues
 * run first: they refuse unknown fields, refused fields and unsupported item, part, tool
 * and include values by name, so refused and no-effect fields are only typed loosely here.
 * Item and part objects are strict: a field this server would not use is a 400 naming it.
 */
import { z } from 'zod';
import { MAX_TOP_LOGPROBS } from '@afd/shared';
import { LOGPROBS_INCLUDE } from './refusedValues.js';

/**
 * A string `text` validates, or anything else `other` validates. (A zod union of the two
 * reports only "invalid input" at the field when `other` fails; this names the bad part.)
 */
function stringOr<S extends z.ZodType, T extends z.ZodType>(text: S, other: T) {
  return z.unknown().transform((v, ctx): z.output<S> | z.output<T> => {
    const r = typeof v === 'string' ? text.safeParse(v) : other.safeParse(v);
    if (r.success) return r.data;
    for (const issue of r.error.issues) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
    return z.NEVER;
  });
}
const stringOrList = <T extends z.ZodType>(list: T) => stringOr(z.string(), list);

/** Validated by checkResponseFields (refused unless neutral) or accepted without effect. */
const unchecked = z.unknown().optional();
const itemStatus = z.enum(['in_progress', 'completed', 'incomplete']).nullish();
/** OpenAI's rule for function and format names. */
const name = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'letters, digits, underscores and dashes, at most 64');
/** Where a function call came from: only the model's own calls ("direct") exist here. */
const caller = z.strictObject({ type: z.literal('direct', 'only direct calls exist here (no programmatic tool calling); leave caller out') }).nullish();

/** Text the client sent. */
const inputText = z.strictObject({
  type: z.literal('input_text'),
  text: z.string(),
  /** A prompt-cache breakpoint; this server keeps no prompt cache across requests (no effect). */
  prompt_cache_breakpoint: unchecked,
});

/** Text the model returned, sent back as part of the conversation. */
const outputText = z.strictObject({
  type: z.literal('output_text'),
  text: z.string(),
  /** Citations; this server returns none. */
  annotations: z.array(z.unknown()).max(0, 'this server returns no annotations; send [] (the output as it came)').optional(),
  /** Log-probabilities of the returned text, as it came; not part of the conversation the model sees. */
  logprobs: z.array(z.unknown()).nullish(),
});

const textPart = z.discriminatedUnion('type', [inputText, outputText]);
export type TextPart = z.infer<typeof textPart>;

/** A message: an EasyInputMessage (its type filled in below), an input message or an output message sent back. */
const messageItem = z.strictObject({
  type: z.literal('message'),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: stringOrList(z.array(textPart)),
  /** The id of an output message sent back (no effect: nothing is stored). */
  id: z.string().nullish(),
  status: itemStatus,
  phase: z.null("phase labels the assistant messages of OpenAI's codex models; this model's template has no such label; leave it out").optional(),
});

/** A function call the model made earlier (an output item sent back). */
const functionCallItem = z.strictObject({
  type: z.literal('function_call'),
  call_id: z.string().min(1),
  name: z.string().min(1),
  /** The call's arguments, a JSON object as text. */
  arguments: z.string(),
  id: z.string().nullish(),
  status: itemStatus,
  namespace: z.null('function namespaces (tool search) are not supported; leave it out').optional(),
  caller,
});

/** What the client's function returned for a call. */
const functionCallOutputItem = z.strictObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1),
  /** Text, or text parts (joined). */
  output: stringOrList(z.array(inputText)),
  id: z.string().nullish(),
  status: itemStatus,
  caller,
});

/** A message item may omit its type (OpenAI's EasyInputMessage); the union dispatches on it. */
const inputItem = z.preprocess(
  (v) => (typeof v === 'object' && v !== null && !Array.isArray(v) && !('type' in v) ? { ...v, type: 'message' } : v),
  z.discriminatedUnion('type', [messageItem, functionCallItem, functionCallOutputItem]),
);
export type InputItem = z.infer<typeof inputItem>;

/** A function the model may call. */
const functionTool = z.strictObject({
  type: z.literal('function'),
  name,
  description: z.string().nullish(),
  /** JSON Schema of the arguments object. */
  parameters: z.record(z.string(), z.unknown()).nullish(),
  /** Accepted; see docs/api.md for what strict changes here. */
  strict: z.boolean().nullish(),
  defer_loading: z.literal(false, 'deferred loading (tool search) is not supported; leave it out').optional(),
  allowed_callers: z.array(z.literal('direct', 'only direct calls exist here (no programmatic tool calling)')).nullish(),
});
export type FunctionTool = z.infer<typeof functionTool>;

const toolChoice = stringOr(
  z.enum(['none', 'auto', 'required']),
  z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('function'), name: z.string().min(1) }),
    z.strictObject({
      type: z.literal('allowed_tools'),
      mode: z.enum(['auto', 'required']),
      tools: z.array(z.strictObject({ type: z.literal('function'), name: z.string().min(1) })).min(1),
    }),
  ]),
);
export type ToolChoice = z.infer<typeof toolChoice>;

const textFormat = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text') }),
  z.strictObject({ type: z.literal('json_object') }),
  z.strictObject({
    type: z.literal('json_schema'),
    name,
    /** The JSON Schema the output must follow. */
    schema: z.record(z.string(), z.unknown()),
    description: z.string().nullish(),
    /** Accepted; the output is constrained to the schema either way. */
    strict: z.boolean().nullish(),
  }),
]);
export type TextFormat = z.infer<typeof textFormat>;

const metadata = z
  .record(z.string().max(64, 'keys are at most 64 characters'), z.string().max(512, 'values are at most 512 characters'))
  .refine((m) => Object.keys(m).length <= 16, 'at most 16 keys');

export const responsesRequestSchema = z.object({
  /** Served model name (see GET /v1/models). */
  model: z.string().min(1),
  /** The conversation: a user message as a string, or items. */
  input: stringOrList(z.array(inputItem).min(1, 'needs at least one item')),
  /** A system message before the input. */
  instructions: z.string().nullish(),
  /** Most tokens to generate; default: up to the context window. */
  max_output_tokens: z.int().min(1).nullish(),
  /** 0 = greedy; default 1. */
  temperature: z.number().min(0).max(2).nullish(),
  /** Nucleus sampling mass in (0, 1]; default 1 (off). */
  top_p: z.number().gt(0).max(1).nullish(),
  /** Top tokens per position of the output text, with include ["message.output_text.logprobs"]. */
  top_logprobs: z.int().min(0).max(MAX_TOP_LOGPROBS, `at most ${MAX_TOP_LOGPROBS}`).nullish(),
  include: z.array(z.literal(LOGPROBS_INCLUDE)).nullish(),
  tools: z.array(functionTool).nullish(),
  tool_choice: toolChoice.nullish(),
  /** Default true; false keeps the first function call only. */
  parallel_tool_calls: z.boolean().nullish(),
  text: z
    .strictObject({
      format: textFormat.nullish(),
      verbosity: z.null('not supported by this server; leave it out and ask for the length in the prompt').optional(),
    })
    .nullish(),
  stream: z.boolean().nullish(),
  stream_options: z
    .strictObject({
      /** OpenAI pads stream events against side channels when true; this server never pads. */
      include_obfuscation: z.literal(false, 'this server does not pad stream events; omit it or send false').nullish(),
    })
    .nullish(),
  metadata: metadata.nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  prompt_cache_key: z.string().nullish(),
  prompt_cache_options: unchecked,
  prompt_cache_retention: unchecked,
  max_tool_calls: z.int().min(1).nullish(),
  background: unchecked,
  context_management: unchecked,
  conversation: unchecked,
  moderation: unchecked,
  previous_response_id: unchecked,
  prompt: unchecked,
  reasoning: unchecked,
  service_tier: unchecked,
  store: unchecked,
  truncation: unchecked,
  // vLLM's extra fields
  /** Keep the k most likely tokens; 0 or -1 = off. */
  top_k: z.int().min(-1).nullish(),
  /** {"token id": bias in -100..100}, added to the token's logit. */
  logit_bias: z.record(z.string().regex(/^(0|[1-9]\d*)$/, 'keys are token ids (non-negative integers as strings)'), z.number().min(-100).max(100)).nullish(),
  /** Seed for reproducible sampling. */
  seed: z.int().nullish(),
  /** Strings that end generation. */
  stop: z.union([z.string(), z.array(z.string()).max(16)]).nullish(),
  repetition_penalty: z.number().gt(0).nullish(),
  ignore_eos: z.boolean().nullish(),
  skip_special_tokens: z.boolean().nullish(),
  include_stop_str_in_output: z.boolean().nullish(),
  /** The response id, as given. */
  request_id: z.string().min(1).nullish(),
  /** Extra chat-template variables, e.g. {"enable_thinking": false}. */
  chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
  cache_salt: z.string().min(1).max(1024).nullish(),
  priority: unchecked,
  kv_transfer_params: unchecked,
  media_io_kwargs: unchecked,
  mm_processor_kwargs: unchecked,
  structured_outputs: unchecked,
  vllm_xargs: unchecked,
  enable_response_messages: unchecked,
  previous_input_messages: unchecked,
});
export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;
