/**
 * A chat prompt, from messages to token ids through the model's chat template: what
 * /v1/chat/completions and /v1/responses share. Text that no prompt of the context window
 * can hold is refused before it is tokenised (promptBound.ts), and a template that cannot
 * render the messages is a 400 naming the request field they came from.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServingEngine } from '../ServingEngine.js';
import { ServingError } from '../ServingError.js';
import type { ChatMessage } from '../tokenizer/ChatTemplate.js';
import type { ChatEncodeOptions, PromptEncoder } from '../tokenizer/PromptEncoder.js';
import { codePointsBeyond } from '../tokenizer/promptBound.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import { ApiError } from './ApiError.js';
import { messageTexts } from './chatMessages.js';

/** What encoding a prompt needs of a rank. */
export interface PromptContext {
  serving: ServingEngine;
  tokenizer: TextTokenizer;
  /** Tokenises prompts off the event loop (a TokenizerPool in a rank). */
  encoder: PromptEncoder;
}

/**
 * Refuses, before tokenising, text that no prompt of the context window can hold: every
 * token stands for at most tokenizer.maxCharsPerToken characters (promptBound.ts).
 * `param` names the field in the error ('prompt', 'messages', 'input').
 */
export function checkPromptChars(ctx: PromptContext, texts: string[], param: string): void {
  const perToken = ctx.tokenizer.maxCharsPerToken;
  if (perToken === null) return;
  const window = ctx.serving.maxContextTokens;
  const limit = window * perToken;
  const chars = codePointsBeyond(texts, limit);
  if (chars === null) return;
  const [has, what] = param === 'prompt' ? ['prompt has', 'prompt'] : param === 'messages' ? ['messages have', 'messages'] : [`${param} has`, param];
  throw new ServingError(
    'context_length_exceeded',
    `This model's maximum context length is ${window} tokens. However, your ${has} at least ${chars} characters, ` +
      `more than ${window} tokens can hold with this tokenizer (at most ${limit} characters, ${perToken} per token). Shorten the ${what}.`,
    param,
  );
}

/**
 * Renders `messages` with the model's chat template and tokenises them (`extraTexts`, e.g.
 * the tools' JSON, count toward the character bound). `param` is the
 * request field the messages came from; a template that fails on them is a 400 naming it.
 */
export async function encodeChatPrompt(ctx: PromptContext, messages: ChatMessage[], options: ChatEncodeOptions, param: string, extraTexts: string[] = []): Promise<number[]> {
  if (!ctx.tokenizer.chatTemplate) throw ApiError.badRequest('this model has no chat template (tokenizer_config.json chat_template); use /v1/completions', param);
  checkPromptChars(ctx, [...messageTexts(messages), ...extraTexts], param);
  try {
    return await ctx.encoder.encodeChat(messages, options);
  } catch (err) {
    if (err instanceof ServingError) throw err; // queue full, stopping, a worker lost
    throw ApiError.badRequest((err as Error).message, param);
  }
}

/** The client went away while its prompt was tokenised: nothing to submit. */
export function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  return res.destroyed || res.writableEnded || req.socket.destroyed;
}
