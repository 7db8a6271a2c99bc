/** POST /v1/completions, POST /v1/chat/completions and GET /v1/models. */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toApiModelInfo, type ServedModelInfo } from '@afd/shared';
import type { ServingEngine } from '../ServingEngine.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import type { ChatMessage } from '../tokenizer/ChatTemplate.js';
import type { PromptEncoder } from '../tokenizer/PromptEncoder.js';
import { codePointsBeyond } from '../tokenizer/promptBound.js';
import { ServingError } from '../ServingError.js';
import { ApiError } from './ApiError.js';
import { collectGeneration, streamGeneration, type ResponseFormat } from './generationResponse.js';
import { checkChatOnly, checkCompletionOnly, toGenerateParams } from './requestParams.js';
import { chatRequestSchema, completionRequestSchema, type ChatRequest, type CompletionRequest } from './schemas.js';
import { sendJson } from './httpUtil.js';

export interface OpenAiContext {
  serving: ServingEngine;
  tokenizer: TextTokenizer;
  /** Tokenises prompts off the event loop (a TokenizerPool in a rank). */
  encoder: PromptEncoder;
  /** Name clients pass as `model`. */
  servedModelName: string;
  /** Model directory (also accepted as `model`). */
  modelPath: string;
  /** Name, parameters, description and example prompts (GET /v1/models field `afd`). */
  modelInfo?: ServedModelInfo | undefined;
}

const nowS = (): number => Math.floor(Date.now() / 1000);

/** The client went away while its prompt was tokenised: nothing to submit. */
function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  return res.destroyed || res.writableEnded || req.socket.destroyed;
}

export class OpenAiRoutes {
  private readonly createdS = nowS();

  constructor(private readonly ctx: OpenAiContext) {}

  models(res: ServerResponse): void {
    sendJson(res, 200, {
      object: 'list',
      data: [
        {
          id: this.ctx.servedModelName,
          object: 'model',
          created: this.createdS,
          owned_by: 'afd',
          root: this.ctx.servedModelName, // never the model's directory: clients need not know this host's paths
          parent: null,
          max_model_len: this.ctx.serving.maxContextTokens,
          ...(this.ctx.modelInfo ? { afd: toApiModelInfo(this.ctx.modelInfo) } : {}),
        },
      ],
    });
  }

  private checkModel(model: string): void {
    if (model !== this.ctx.servedModelName && model !== this.ctx.modelPath) {
      throw new ApiError(404, 'invalid_request_error', `The model \`${model}\` does not exist. This server serves \`${this.ctx.servedModelName}\` (see GET /v1/models).`, 'model_not_found', 'model');
    }
  }

  async completions(body: unknown, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const r = completionRequestSchema.parse(body);
    this.checkModel(r.model);
    checkCompletionOnly(r);
    const p = Array.isArray(r.prompt) ? r.prompt[0]! : r.prompt;
    if (typeof p === 'string') this.checkChars([p], 'prompt');
    const promptIds = typeof p === 'string' ? await this.ctx.encoder.encode(p) : typeof p === 'number' ? (r.prompt as number[]) : p;
    if (clientGone(req, res)) return;
    const handle = this.ctx.serving.submit(toGenerateParams(r, promptIds, r.max_tokens));
    const id = `cmpl-${randomUUID().replaceAll('-', '')}`;
    const created = nowS();
    const model = r.model;
    const choice = (text: string, finish: string | null): object => ({ index: 0, text, logprobs: null, finish_reason: finish });
    const withUsage = r.stream_options?.include_usage === true;
    const fmt: ResponseFormat = {
      chunk: (text, finish, _first, usage) => ({ id, object: 'text_completion', created, model, choices: [choice(text, finish)], ...(withUsage ? { usage } : {}) }),
      usageChunk: (usage) => ({ id, object: 'text_completion', created, model, choices: [], usage }),
      full: (text, finish, usage) => ({ id, object: 'text_completion', created, model, choices: [choice(text, finish)], usage }),
    };
    await this.respond(r, promptIds.length, req, res, handle, fmt);
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
      chunk: (text, finish, first, usage) => ({
        ...base,
        choices: [{ index: 0, delta: finish ? {} : first ? { role: 'assistant', content: text } : { content: text }, logprobs: null, finish_reason: finish }],
        ...(withUsage ? { usage } : {}),
      }),
      usageChunk: (usage) => ({ ...base, choices: [], usage }),
      full: (text, finish, usage) => ({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null, tool_calls: [] }, logprobs: null, finish_reason: finish }],
        usage,
      }),
    };
    await this.respond(r, promptIds.length, req, res, handle, fmt);
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
    const messages: ChatMessage[] = r.messages.map((m) => ({
      role: m.role === 'developer' ? 'system' : m.role,
      content: typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text).join(''),
      ...(m.name ? { name: m.name } : {}),
    }));
    this.checkChars(messages.map((m) => m.content), 'messages');
    try {
      return await this.ctx.encoder.encodeChat(messages, { addGenerationPrompt: true, extra: r.chat_template_kwargs ?? {} });
    } catch (err) {
      if (err instanceof ServingError) throw err; // queue full, stopping, a worker lost
      throw ApiError.badRequest((err as Error).message, 'messages');
    }
  }

  private async respond(r: CompletionRequest | ChatRequest, promptTokens: number, req: IncomingMessage, res: ServerResponse, handle: Parameters<typeof streamGeneration>[2], fmt: ResponseFormat): Promise<void> {
    const include = r.stream_options?.include_usage === true;
    if (r.stream) return streamGeneration(req, res, handle, fmt, { include, continuous: include && r.stream_options?.continuous_usage_stats === true, promptTokens });
    const body = await collectGeneration(req, res, handle, fmt);
    if (body) sendJson(res, 200, body);
  }
}
