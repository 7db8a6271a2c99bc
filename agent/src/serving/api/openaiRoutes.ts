/** POST /v1/completions and POST /v1/chat/completions. */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandle, ServingEngine } from '../ServingEngine.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import type { PromptEncoder } from '../tokenizer/PromptEncoder.js';
import { codePointsBeyond } from '../tokenizer/promptBound.js';
import { ServingError } from '../ServingError.js';
import { ApiError } from './ApiError.js';
import { toTemplateMessages } from './chatMessages.js';
import { collectGeneration, streamGeneration } from './generationResponse.js';
import { checkBatchSize, checkPrompt, promptsOf } from './promptBatch.js';
import { checkChatOnly, checkCompletionOnly, toGenerateParams } from './requestParams.js';
import type { ResponseFormat } from './responseFormat.js';
import { chatRequestSchema, completionRequestSchema, type ChatRequest, type CompletionRequest } from './schemas.js';
import { sendJson } from './httpUtil.js';
import { checkServedModel } from './modelRoutes.js';

export interface OpenAiContext {
  serving: ServingEngine;
  tokenizer: TextTokenizer;
  /** Tokenises prompts off the event loop (a TokenizerPool in a rank). */
  encoder: PromptEncoder;
  /** Name clients pass as `model`. */
  servedModelName: string;
  /** Model directory (also accepted as `model`). */
  modelPath: string;
}

const nowS = (): number => Math.floor(Date.now() / 1000);

/** The client went away while its prompt was tokenised: nothing to submit. */
function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  return res.destroyed || res.writableEnded || req.socket.destroyed;
}

export class OpenAiRoutes {
  constructor(private readonly ctx: OpenAiContext) {}

  private checkModel(model: string): void {
    checkServedModel(this.ctx, model);
  }

  /**
   * A prompt or a batch of them: every prompt is tokenised and checked first (a bad one
   * refuses the request, naming its index, before anything is submitted), then all are
   * submitted at once so that the scheduler admits them into the same step.
   */
  async completions(body: unknown, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const r = completionRequestSchema.parse(body);
    this.checkModel(r.model);
    checkCompletionOnly(r);
    const prompts = promptsOf(r.prompt);
    const count = prompts.length;
    checkBatchSize(count, this.ctx.serving.scheduler.config.maxNumSeqs);
    prompts.forEach((p, i) => {
      if (typeof p === 'string') checkPrompt(i, count, () => this.checkChars([p], 'prompt'));
    });
    const promptIds = await Promise.all(prompts.map((p) => (typeof p === 'string' ? this.ctx.encoder.encode(p) : p)));
    if (clientGone(req, res)) return;
    const params = promptIds.map((ids, i) => {
      const p = toGenerateParams(r, ids, r.max_tokens);
      checkPrompt(i, count, () => this.ctx.serving.checkRequest(p));
      return p;
    });
    const handles = this.ctx.serving.submitAll(params);
    const id = `cmpl-${randomUUID().replaceAll('-', '')}`;
    const created = nowS();
    const model = r.model;
    const choice = (index: number, text: string, finish: string | null): object => ({ index, text, logprobs: null, finish_reason: finish });
    const withUsage = r.stream_options?.include_usage === true;
    const fmt: ResponseFormat = {
      chunk: (index, text, finish, _first, usage) => ({ id, object: 'text_completion', created, model, choices: [choice(index, text, finish)], ...(withUsage ? { usage } : {}) }),
      usageChunk: (usage) => ({ id, object: 'text_completion', created, model, choices: [], usage }),
      full: (choices, usage) => ({ id, object: 'text_completion', created, model, choices: choices.map((c, i) => choice(i, c.text, c.finish)), usage }),
    };
    await this.respond(r, req, res, handles, fmt);
  }

  async chat(body: unknown, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const r = chatRequestSchema.parse(body);
    this.checkModel(r.model);
    checkChatOnly(r);
    const promptIds = await this.encodeChat(r);
    if (clientGone(req, res)) return;
    const handle = this.ctx.serving.submit(toGenerateParams(r, promptIds, r.max_completion_tokens ?? r.max_tokens));
    const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
    const created = nowS();
    const model = r.model;
    const withUsage = r.stream_options?.include_usage === true;
    const base = { id, object: 'chat.completion.chunk', created, model };
    const fmt: ResponseFormat = {
      chunk: (index, text, finish, first, usage) => ({
        ...base,
        choices: [{ index, delta: finish ? {} : first ? { role: 'assistant', content: text } : { content: text }, logprobs: null, finish_reason: finish }],
        ...(withUsage ? { usage } : {}),
      }),
      usageChunk: (usage) => ({ ...base, choices: [], usage }),
      full: (choices, usage) => ({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: choices.map((c, index) => ({ index, message: { role: 'assistant', content: c.text, refusal: null, tool_calls: [] }, logprobs: null, finish_reason: c.finish })),
        usage,
      }),
    };
    await this.respond(r, req, res, [handle], fmt);
  }

  /**
   * Refuses, before tokenising, text that no prompt of the context window can hold: every
   * token stands for at most tokenizer.maxCharsPerToken characters (promptBound.ts).
   */
  private checkChars(texts: string[], param: string): void {
    const perToken = this.ctx.tokenizer.maxCharsPerToken;
    if (perToken === null) return;
    const window = this.ctx.serving.maxContextTokens;
    const limit = window * perToken;
    const chars = codePointsBeyond(texts, limit);
    if (chars === null) return;
    throw new ServingError(
      'context_length_exceeded',
      `This model's maximum context length is ${window} tokens. However, your ${param === 'prompt' ? 'prompt has' : 'messages have'} at least ${chars} characters, ` +
        `more than ${window} tokens can hold with this tokenizer (at most ${limit} characters, ${perToken} per token). Shorten the ${param === 'prompt' ? 'prompt' : 'messages'}.`,
      param,
    );
  }

  private async encodeChat(r: ChatRequest): Promise<number[]> {
    if (!this.ctx.tokenizer.chatTemplate) throw ApiError.badRequest('this model has no chat template (tokenizer_config.json chat_template); use /v1/completions', 'messages');
    const messages = toTemplateMessages(r.messages);
    this.checkChars(messages.map((m) => m.content), 'messages');
    try {
      return await this.ctx.encoder.encodeChat(messages, { addGenerationPrompt: true, extra: r.chat_template_kwargs ?? {} });
    } catch (err) {
      if (err instanceof ServingError) throw err; // queue full, stopping, a worker lost
      throw ApiError.badRequest((err as Error).message, 'messages');
    }
  }

  /** Streams or collects the request's generations, one per prompt (choice i is handles[i]). */
  private async respond(r: CompletionRequest | ChatRequest, req: IncomingMessage, res: ServerResponse, handles: RequestHandle[], fmt: ResponseFormat): Promise<void> {
    const include = r.stream_options?.include_usage === true;
    if (r.stream) return streamGeneration(req, res, handles, fmt, { include, continuous: include && r.stream_options?.continuous_usage_stats === true });
    const body = await collectGeneration(req, res, handles, fmt);
    if (body) sendJson(res, 200, body);
  }
}
