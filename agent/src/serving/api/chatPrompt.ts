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
import { type ChatEncodeOptions, type PromptEncoder, PromptTooLong, type TaskControl } from '../tokenizer/PromptEncoder.js';
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

/** How an error names the prompt: ['prompt has', 'prompt'], ['messages have', 'messages'] ... */
function phrasing(param: string): [string, string] {
  return param === 'prompt' ? ['prompt has', 'prompt'] : param === 'messages' ? ['messages have', 'messages'] : [`${param} has`, param];
}

/**
 * What tokenising a prompt may stop at: the context window (a prompt of that many tokens
 * is refused anyway), unless the request truncates its prompt, which needs every token.
 */
export function encodeControl(ctx: PromptContext, req: IncomingMessage, res: ServerResponse, truncates: boolean): TaskControl {
  return { atMostTokens: truncates ? undefined : ctx.serving.maxContextTokens, signal: clientSignal(req, res) };
}

/** Aborts when the client closes its connection before its response has ended. */
export function clientSignal(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  if (clientGone(req, res)) ac.abort();
  else res.once('close', () => (res.writableEnded ? undefined : ac.abort()));
  return ac.signal;
}

/** A prompt the encoder stopped counting past the window, as the context-length refusal. */
function refusal(ctx: PromptContext, err: unknown, param: string): unknown {
  if (!(err instanceof PromptTooLong)) return err;
  const [has, what] = phrasing(param);
  return new ServingError(
    'context_length_exceeded',
    `This model's maximum context length is ${ctx.serving.maxContextTokens} tokens. However, your ${has} at least ${err.atLeast} tokens ` +
      `(tokenising stopped once it passed the limit), leaving no room for output. Shorten the ${what}.`,
    param,
  );
}

/** Tokenises a completion prompt (special tokens per the tokenizer); see encodeControl. */
export async function encodeTextPrompt(ctx: PromptContext, text: string, control: TaskControl, param: string): Promise<number[]> {
  try {
    return await ctx.encoder.encode(text, control);
  } catch (err) {
    throw refusal(ctx, err, param);
  }
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
  const [has, what] = phrasing(param);
  throw new ServingError(
    'context_length_exceeded',
    `This model's maximum context length is ${window} tokens. However, your ${has} at least ${chars} characters, ` +
      `more than ${window} tokens can hold with this tokenizer (at most ${limit} characters, ${perToken} per token). Shorten the ${what}.`,
    param,
  );
}

/**
 * Renders `messages` with the model's chat template and tokenises them (`extraTexts`, e.g.
 * the tools' JSON, count toward the character bound; `control`: see encodeControl). `param` is the
 * request field the messages came from; a template that fails on them is a 400 naming it.
 */
export async function encodeChatPrompt(ctx: PromptContext, messages: ChatMessage[], options: ChatEncodeOptions, param: string, control: TaskControl, extraTexts: string[] = []): Promise<number[]> {
  if (!ctx.tokenizer.chatTemplate) throw ApiError.badRequest('this model has no chat template (tokenizer_config.json chat_template); use /v1/completions', param);
  checkPromptChars(ctx, [...messageTexts(messages), ...extraTexts], param);
  try {
    return await ctx.encoder.encodeChat(messages, options, control);
  } catch (err) {
    if (err instanceof PromptTooLong) throw refusal(ctx, err, param);
    if (err instanceof ServingError) throw err; // queue full, stopping, a worker lost, the client gone
    throw ApiError.badRequest((err as Error).message, param);
  }
}

/** The client went away while its prompt was tokenised: nothing to submit. */
export function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  return res.destroyed || res.writableEnded || req.socket.destroyed;
}
