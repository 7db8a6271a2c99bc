/**
 * Turns a request's prompt into token ids (and /detokenize's ids back into text) without
 * holding the event loop: what the OpenAI and tokenize routes call. The role process uses a TokenizerPool (worker threads); InlineEncoder runs
 * the tokenizer on the calling thread, for in-process servers (unit tests, tools) whose
 * prompts are small.
 */
import type { ChatMessage } from './ChatTemplate.js';
import type { TextTokenizer } from './TextTokenizer.js';

export interface ChatEncodeOptions {
  addGenerationPrompt: boolean;
  /** End the text at the last message's content, so the model continues it (no end-of-turn). */
  continueFinalMessage?: boolean;
  /** Add the tokenizer's special tokens (e.g. BOS) to the rendered chat (default false: the template has them). */
  addSpecialTokens?: boolean;
  extra?: Record<string, unknown>;
}

export interface EncodeOptions {
  /** Add the tokenizer's special tokens, e.g. BOS (default true). */
  addSpecialTokens?: boolean;
}

/** What a caller may ask of one task beyond its text. */
export interface TaskControl {
  /** Tokenising may stop once the prompt is known to hold this many tokens (PromptTooLong). */
  atMostTokens?: number;
  /** Aborted when nobody wants the result any more (the client left). */
  signal?: AbortSignal;
}

/** The prompt holds at least `atLeast` tokens (at least the `atMostTokens` asked); counting stopped there. */
export class PromptTooLong extends Error {
  constructor(readonly atLeast: number) {
    super(`the prompt has at least ${atLeast} tokens`);
    this.name = 'PromptTooLong';
  }
}

/** What an encoder with worker threads has done (afd:tokenizer_* metrics). */
export interface EncoderStats {
  /** Tasks waiting for a worker. */
  waiting: number;
  /** Tasks ended, by outcome: done (ids or text), too_long (stopped past its limit), cancelled (the caller left), failed. */
  outcomes: Record<'done' | 'too_long' | 'cancelled' | 'failed', number>;
  /** Long prompt pieces (a chat's history, a shared system prompt) the workers found in their caches, or tokenised. */
  pieceCache: { hits: number; misses: number };
}

export interface PromptEncoder {
  /** Counters of an encoder with worker threads (none for the inline one). */
  stats?(): EncoderStats;
  /** Token ids of a completion prompt (special tokens added per the tokenizer unless asked not to). */
  encode(text: string, options?: EncodeOptions & TaskControl): Promise<number[]>;
  /** Text of token ids, special tokens kept (/detokenize); the caller checks the ids are in the vocabulary. */
  decode(ids: number[]): Promise<string>;
  /** The chat rendered with the model's template, tokenised (throws when it cannot render). */
  encodeChat(messages: ChatMessage[], options: ChatEncodeOptions, control?: TaskControl): Promise<number[]>;
  /** Frees the encoder's threads; pending calls are rejected. */
  close(): Promise<void>;
}

export class InlineEncoder implements PromptEncoder {
  constructor(private readonly tokenizer: TextTokenizer) {}

  async encode(text: string, options: EncodeOptions = {}): Promise<number[]> {
    return this.tokenizer.encode(text, options.addSpecialTokens ?? true);
  }

  async decode(ids: number[]): Promise<string> {
    return this.tokenizer.decode(ids, false);
  }

  async encodeChat(messages: ChatMessage[], options: ChatEncodeOptions): Promise<number[]> {
    return this.tokenizer.encodeChat(messages, options);
  }

  async close(): Promise<void> {}
}
