/**
 * Console chat requests (bridge channel `chat.start`): a chat over messages with the
 * model's chat template, or a plain completion of a prompt, with sampling settings.
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
});

/** One chat message. */
export const chatMessageSchema = z.object({
  /** Author role. */
  role: z.enum(['system', 'user', 'assistant']),
  /** Text content. */
  content: z.string(),
});

/** Request of chat.start: a chat (messages, chat template applied) or a raw completion (prompt). */
export const chatStartSchema = z.discriminatedUnion('mode', [
  z.object({
    /** Chat completion: the server applies the chat template. */
    mode: z.literal('chat'),
    /** Conversation so far, oldest first. */
    messages: z.array(chatMessageSchema).min(1),
    /** Sampling settings. */
    sampling: chatSamplingSchema.prefault({}),
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
