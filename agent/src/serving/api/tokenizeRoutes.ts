/**
 * POST /tokenize and POST /detokenize (vLLM's shapes): a prompt or a chat to token ids, with
 * their count and the context window, and token ids back to text. The model's own tokenizer
 * and chat template, through the rank's prompt encoder (worker threads for long prompts).
 */
import type { ServerResponse } from 'node:http';
import { ServingError } from '../ServingError.js';
import type { PromptEncoder } from '../tokenizer/PromptEncoder.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import { ApiError } from './ApiError.js';
import { templateToolStyle } from '../tools/templateToolStyle.js';
import { toTemplateMessages } from './chatMessages.js';
import { generationPromptOf } from './generationPrompt.js';
import { sendJson } from './httpUtil.js';
import { checkServedModel, type ServedModel } from './modelRoutes.js';
import { detokenizeSchema, tokenizeChatSchema, tokenizePromptSchema, type TokenizeChatRequest } from './tokenizeSchemas.js';
import { functionToolsOf, templateToolsOf } from './toolSchemas.js';

export interface TokenizeContext {
  tokenizer: TextTokenizer;
  encoder: PromptEncoder;
  served: ServedModel;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class TokenizeRoutes {
  constructor(private readonly ctx: TokenizeContext) {}

  async tokenize(body: unknown, res: ServerResponse): Promise<void> {
    const chat = isObject(body) && body['messages'] !== undefined;
    if (chat && body['prompt'] !== undefined) throw ApiError.badRequest('send either `prompt` (text) or `messages` (a chat) to /tokenize, not both', 'prompt');
    const r = chat ? tokenizeChatSchema.parse(body) : tokenizePromptSchema.parse(body);
    if (r.model) checkServedModel(this.ctx.served, r.model);
    const tokens = 'messages' in r ? await this.encodeChat(r) : await this.ctx.encoder.encode(r.prompt, { addSpecialTokens: r.add_special_tokens ?? true });
    const tokenStrs = r.return_token_strs ? tokens.map((id) => this.ctx.tokenizer.vocabString(id) ?? '') : null;
    sendJson(res, 200, { count: tokens.length, max_model_len: this.ctx.served.maxModelLen, tokens, token_strs: tokenStrs });
  }

  async detokenize(body: unknown, res: ServerResponse): Promise<void> {
    const r = detokenizeSchema.parse(body);
    if (r.model) checkServedModel(this.ctx.served, r.model);
    const { tokenizer } = this.ctx;
    // The tokenizer's vocabulary: an id it has no token for would decode to nothing.
    const bad = r.tokens.findIndex((id) => tokenizer.vocabString(id) === undefined);
    if (bad >= 0) throw ApiError.badRequest(`tokens[${bad}]: token id ${r.tokens[bad]} is outside the vocabulary: the tokenizer has no token with this id`, 'tokens', 'invalid_token_id');
    // Special tokens stay in the text, as vLLM's /detokenize keeps them.
    sendJson(res, 200, { prompt: await this.ctx.encoder.decode(r.tokens) });
  }

  private async encodeChat(r: TokenizeChatRequest): Promise<number[]> {
    if (!this.ctx.tokenizer.chatTemplate) throw ApiError.badRequest('this model has no chat template (tokenizer_config.json chat_template); tokenize a `prompt` instead', 'messages');
    if (r.chat_template) throw ApiError.badRequest('`chat_template` is not accepted: the model\'s own template is used; leave it out', 'chat_template');
    if (r.chat_template_kwargs && 'tools' in r.chat_template_kwargs) throw ApiError.badRequest('chat_template_kwargs.tools: the server renders tools from the request; send the top-level tools field', 'chat_template_kwargs.tools');
    const tools = templateToolsOf(functionToolsOf(r.tools));
    const options = {
      ...generationPromptOf(r),
      addSpecialTokens: r.add_special_tokens ?? false,
      extra: { ...r.chat_template_kwargs, ...(tools ? { tools } : {}) },
    };
    try {
      return await this.ctx.encoder.encodeChat(toTemplateMessages(r.messages, templateToolStyle(this.ctx.tokenizer.chatTemplate.source)), options);
    } catch (err) {
      if (err instanceof ServingError) throw err; // queue full, stopping, a worker lost
      throw ApiError.badRequest((err as Error).message, 'messages');
    }
  }
}
