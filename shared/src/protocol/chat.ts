/**
 * Console chat requests (bridge channel `chat.start`): a chat over messages with the
 * model's chat template, or a plain completion of a prompt, with sampling settings. A chat
 * may carry OpenAI's structured-output and tool fields (`response_format`, `tools`,
 * `tool_choice`, `parallel_tool_calls`), kept under OpenAI's names because the console's
 * service sends them to the API as they are.
 */
import { z } from 'zod';

/** Sampling settings of a console chat. */
export const chatSamplingSchema = z.strictObject({
  /** Softmax temperature; 0 = greedy (default 0.7). */
  temperature: z.number().min(0).max(2).default(0.7),
  /** Nucleus sampling mass, (0, 1]; 1 = off (default 1). */
  topP: z.number().gt(0).max(1).default(1),
  /** Top-k filter; 0 = off (default 0). */
  topK: z.int().min(0).default(0),
  /** Most tokens to generate (default 256). */
  maxTokens: z.int().min(1).max(1_000_000).default(256),
  /** uint32 seed for reproducible sampling; null = random (default null). */
  seed: z.int().min(0).max(0xffffffff).nullable().default(null),
  /** Drop tokens below minP times the top probability, [0, 1]; 0 = off (default 0; vLLM's min_p). */
  minP: z.number().min(0).max(1).default(0),
  /** Subtracted once from every token already in the reply, -2..2 (default 0). */
  presencePenalty: z.number().min(-2).max(2).default(0),
  /** Subtracted per occurrence of a token in the reply, -2..2 (default 0). */
  frequencyPenalty: z.number().min(-2).max(2).default(0),
  /** > 0; tokens of prompt and reply: positive logits divided by it, negative multiplied; 1 = off (default 1; vLLM's). */
  repetitionPenalty: z.number().gt(0).default(1),
  /** Strings that end the reply (cut before them), at most 16 (default none). */
  stop: z.array(z.string().min(1)).max(16).default([]),
  /** Token view: log-probabilities of each reply token with this many top alternatives (0..20); null = none (default). */
  topLogprobs: z.int().min(0).max(20).nullable().default(null),
});

/** A function call of an assistant message, as OpenAI names its fields (`tool_calls[i]`). */
export const chatToolCallSchema = z.strictObject({
  /** Call id; the tool message answering it names it in `tool_call_id`. */
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.strictObject({
    /** Function name. */
    name: z.string().min(1),
    /** Arguments, a JSON text as the model wrote it. */
    arguments: z.string(),
  }),
});
export type ChatToolCall = z.output<typeof chatToolCallSchema>;

/** One chat message (OpenAI's fields: `tool_calls` on assistant messages, `tool_call_id` on tool results). */
export const chatMessageSchema = z.discriminatedUnion('role', [
  z.object({ /** Author role. */ role: z.literal('system'), /** Text content. */ content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    /** Text; null only beside tool calls. */
    content: z.string().nullable(),
    /** The function calls the model made; absent when none. */
    tool_calls: z.array(chatToolCallSchema).min(1).optional(),
  }),
  z.object({
    role: z.literal('tool'),
    /** The function's result as text. */
    content: z.string(),
    /** The call it answers. */
    tool_call_id: z.string().min(1),
  }),
]);
export type ChatMessageInput = z.input<typeof chatMessageSchema>;

const jsonObject = z.record(z.string(), z.unknown());

/** OpenAI's `response_format`: plain text, any JSON object, or JSON that follows a schema. */
export const chatResponseFormatSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text') }),
  z.strictObject({ type: z.literal('json_object') }),
  z.strictObject({
    type: z.literal('json_schema'),
    json_schema: z.strictObject({
      /** Schema name: letters, digits, _ and -, at most 64 (OpenAI's rule). */
      name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, _ or -'),
      description: z.string().optional(),
      /** The JSON Schema. */
      schema: jsonObject,
      strict: z.boolean().optional(),
    }),
  }),
]);
export type ChatResponseFormat = z.output<typeof chatResponseFormatSchema>;

/** One entry of OpenAI's `tools`: a function the model may call. */
export const chatFunctionToolSchema = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, _ or -'),
    description: z.string().optional(),
    /** JSON Schema of the arguments object. */
    parameters: jsonObject.optional(),
    strict: z.boolean().optional(),
  }),
});
export type ChatFunctionTool = z.output<typeof chatFunctionToolSchema>;

/** OpenAI's `tool_choice`: auto, none, required, or one named function. */
export const chatToolChoiceSchema = z.union([
  z.enum(['auto', 'none', 'required']),
  z.strictObject({ type: z.literal('function'), function: z.strictObject({ name: z.string().min(1) }) }),
]);
export type ChatToolChoice = z.output<typeof chatToolChoiceSchema>;

/** One fragment of a streamed tool call, OpenAI's `choices[i].delta.tool_calls[j]` (nulls dropped). */
export const chatToolCallDeltaSchema = z.strictObject({
  /** Which call of the message the fragment belongs to. */
  index: z.int().min(0),
  /** The call id, on the call's first fragment. */
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z
    .strictObject({
      /** The function name, on the call's first fragment. */
      name: z.string().optional(),
      /** The next piece of the arguments text. */
      arguments: z.string().optional(),
    })
    .optional(),
});
export type ChatToolCallDelta = z.output<typeof chatToolCallDeltaSchema>;

/** One alternative at a reply position: a token (its text) and its log-probability. */
export const chatTokenAlternativeSchema = z.strictObject({
  /** The token as text (the token decoded alone). */
  token: z.string(),
  /** Natural log of its probability (<= 0; -9999 for an impossible token, as vLLM). */
  logprob: z.number(),
});

/** One generated token with its log-probability and the top alternatives at its position (the token view). */
export const chatTokenLogprobSchema = chatTokenAlternativeSchema.extend({
  /** The most likely tokens there, best first (as many as topLogprobs asked; may include the token itself). */
  top: z.array(chatTokenAlternativeSchema),
});
export type ChatTokenLogprob = z.output<typeof chatTokenLogprobSchema>;

/** Request of chat.start: a chat (messages, chat template applied) or a raw completion (prompt). */
export const chatStartSchema = z.discriminatedUnion('mode', [
  z.object({
    /** Chat completion: the server applies the chat template. */
    mode: z.literal('chat'),
    /** Conversation so far, oldest first. */
    messages: z.array(chatMessageSchema).min(1),
    /** Sampling settings. */
    sampling: chatSamplingSchema.prefault({}),
    /** Structured output: sent to the API as given; absent = not sent. */
    response_format: chatResponseFormatSchema.optional(),
    /** Functions the model may call: sent as given; absent = not sent. */
    tools: z.array(chatFunctionToolSchema).min(1).optional(),
    /** Sent as given; absent = not sent (the API's default). */
    tool_choice: chatToolChoiceSchema.optional(),
    /** Sent as given; absent = not sent (the API's default). */
    parallel_tool_calls: z.boolean().optional(),
    /** vLLM's: end the prompt inside the final (assistant) message so the reply continues it; absent = not sent (false). */
    continue_final_message: z.boolean().optional(),
    /** vLLM's: end the prompt with the assistant turn start; absent = not sent (true). False with continue_final_message. */
    add_generation_prompt: z.boolean().optional(),
  }),
  z.object({
    /** Plain completion of a prompt. */
    mode: z.literal('completion'),
    /** Prompt text. */
    prompt: z.string().min(1),
    /** Sampling settings. */
    sampling: chatSamplingSchema.prefault({}),
  }),
]);
export type ChatStart = z.output<typeof chatStartSchema>;
export type ChatStartInput = z.input<typeof chatStartSchema>;
export type ChatSampling = z.output<typeof chatSamplingSchema>;
