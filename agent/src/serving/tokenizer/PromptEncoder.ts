/**
 * Turns a request's prompt into token ids without holding the event loop: what the OpenAI
 * routes call. The role process uses a TokenizerPool (worker threads); InlineEncoder runs
 * the tokenizer on the calling thread, for in-process servers (unit tests, tools) whose
 * prompts are small.
 */
import type { ChatMessage } from './ChatTemplate.js';
import type { TextTokenizer } from './TextTokenizer.js';

export interface ChatEncodeOptions {
  addGenerationPrompt: boolean;
  extra?: Record<string, unknown>;
}

export interface PromptEncoder {
  /** Token ids of a completion prompt (special tokens added per the tokenizer). */
  encode(text: string): Promise<number[]>;
  /** The chat rendered with the model's template, tokenised (throws when it cannot render). */
  encodeChat(messages: ChatMessage[], options: ChatEncodeOptions): Promise<number[]>;
  /** Frees the encoder's threads; pending calls are rejected. */
  close(): Promise<void>;
}

export class InlineEncoder implements PromptEncoder {
  constructor(private readonly tokenizer: TextTokenizer) {}

  async encode(text: string): Promise<number[]> {
    return this.tokenizer.encode(text);
  }

  async encodeChat(messages: ChatMessage[], options: ChatEncodeOptions): Promise<number[]> {
    return this.tokenizer.encodeChat(messages, options);
  }

  async close(): Promise<void> {}
}
