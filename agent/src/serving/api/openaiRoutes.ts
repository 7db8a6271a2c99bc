/** POST /v1/completions and POST /v1/chat/completions. */
import { setPdHeaders } from './pdHeaders.js';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ToolCallParserName } from '@afd/shared';
import type { RequestHandle, ServingEngine } from '../ServingEngine.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import type { PromptEncoder, TaskControl } from '../tokenizer/PromptEncoder.js';
import { checkPromptChars, clientGone, encodeChatPrompt, encodeControl, encodeTextPrompt } from './chatPrompt.js';
import { templateToolStyle, type TemplateToolStyle } from '../tools/templateToolStyle.js';
import { resolveToolParser } from '../tools/toolParsers.js';
import { chatFormat } from './chatResponse.js';
import { completionsFormat } from './completionsResponse.js';
import { contentText, toTemplateMessages } from './chatMessages.js';
import { chatToolUse, type ChatToolUse } from './chatToolUse.js';
import { requestGrammar } from '../grammar/requestGrammar.js';
import { collectGeneration, streamGeneration } from './generationResponse.js';
import type { TokenDisplay } from './logprobsFormat.js';
import { checkBatchSize, checkPrompt, promptsOf } from './promptBatch.js';
import { checkRequestFields } from './requestFields.js';
import { checkChatOnly, responseOptions, toGenerateParams } from './requestParams.js';
import { chatGenerationPromptOf } from './generationPrompt.js';
import type { ResponseFormat } from './responseFormat.js';
import { chatRequestSchema, completionRequestSchema, type ChatRequest, type CompletionRequest } from './schemas.js';
import { sendJson } from './httpUtil.js';
import { markStage } from '../metrics/requestPreprocess.js';
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
  /** --tool-call-parser: how tool_choice "auto" output is read (default auto: from the chat template). */
  toolCallParser?: ToolCallParserName | 'auto';
}

const nowS = (): number => Math.floor(Date.now() / 1000);


export class OpenAiRoutes {
  /** The parser of tool_choice "auto" output (null: the template has no markup the server knows, and none was set). */
  private readonly toolParser: ToolCallParserName | null;
  /** How the chat template reads tool calls in the history. */
  private readonly templateStyle: TemplateToolStyle;

  constructor(private readonly ctx: OpenAiContext) {
    const source = ctx.tokenizer.chatTemplate?.source ?? null;
    this.toolParser = resolveToolParser(ctx.toolCallParser ?? 'auto', source);
    this.templateStyle = templateToolStyle(source ?? '');
  }

  private checkModel(model: string): void {
    checkServedModel(this.ctx, model);
  }

  /**
   * A prompt or a batch of them: every prompt is tokenised and checked first (a bad one
   * refuses the request, naming its index, before anything is submitted), then all are
   * submitted at once so that the scheduler admits them into the same step.
   */
  async completions(body: unknown, req: IncomingMessage, res: ServerResponse): Promise<void> {
    checkRequestFields(body, 'completions');
    const r = completionRequestSchema.parse(body);
    this.checkModel(r.model);
    const prompts = promptsOf(r.prompt);
    const count = prompts.length;
    checkBatchSize(count, this.ctx.serving.scheduler.config.maxNumSeqs);
    prompts.forEach((p, i) => {
      if (typeof p === 'string') checkPrompt(i, count, () => checkPromptChars(this.ctx, [p], 'prompt'));
    });
    const control = encodeControl(this.ctx, req, res, r.truncate_prompt_tokens != null);
    const promptIds = await Promise.all(
      prompts.map((p, i) => (typeof p === 'string' ? encodeTextPrompt(this.ctx, p, control, 'prompt').catch((err: unknown) => checkPrompt(i, count, () => { throw err; })) : p)),
    );
    markStage(req, 'prompt');
    if (clientGone(req, res)) return;
    const grammar = requestGrammar(body as Readonly<Record<string, unknown>>);
    const params = promptIds.map((ids, i) => {
      const p = toGenerateParams(r, ids, 'completions');
      if (grammar) p.grammar = grammar;
      checkPrompt(i, count, () => this.ctx.serving.checkRequest(p, 'prompt'));
      return p;
    });
    const handles = await this.ctx.serving.submitAllAsync(params);
    markStage(req, 'submit');
    if (clientGone(req, res)) return abortAll(handles);
    setPdHeaders(res, handles, params.length);
    const n = r.n ?? 1;
    const fmt = completionsFormat({
      id: `cmpl-${r.request_id ?? randomUUID().replaceAll('-', '')}`,
      created: nowS(),
      model: r.model,
      // Choice j is prompt floor(j / n)'s (submitAll returns each prompt's n handles in a row).
      prompts: handles.map((_, j) => {
        const i = Math.floor(j / n);
        const p = prompts[i]!;
        const untruncated = params[i]!.promptIds === promptIds[i];
        return { ids: params[i]!.promptIds, text: typeof p === 'string' && untruncated ? p : this.ctx.tokenizer.decode(params[i]!.promptIds) };
      }),
      echo: r.echo === true,
      echoOnly: r.echo === true && r.max_tokens === 0,
      withUsage: r.stream_options?.include_usage === true,
      opts: responseOptions(r, 'completions'),
      display: this.display(r),
    });
    await this.respond(r, req, res, handles, fmt);
  }

  /** How the request wants tokens shown in logprobs. */
  private display(r: CompletionRequest | ChatRequest): TokenDisplay {
    const tok = this.ctx.tokenizer;
    return { tokenString: (id) => tok.tokenString(id), asIds: r.return_tokens_as_token_ids === true };
  }

  async chat(body: unknown, req: IncomingMessage, res: ServerResponse): Promise<void> {
    checkRequestFields(body, 'chat');
    const r = chatRequestSchema.parse(body);
    this.checkModel(r.model);
    checkChatOnly(r);
    const tools = chatToolUse(r, this.toolParser);
    const grammar = tools.use.grammar ?? requestGrammar(body as Readonly<Record<string, unknown>>);
    const encoded = await this.encodeChat(r, tools, encodeControl(this.ctx, req, res, r.truncate_prompt_tokens != null));
    markStage(req, 'prompt');
    if (clientGone(req, res)) return;
    const params = toGenerateParams(r, encoded, 'chat');
    if (grammar) params.grammar = grammar;
    if (tools.use.keepSpecialTokens) params.skipSpecialTokens = false; // the parser reads the markup (as vLLM)
    const handles = await this.ctx.serving.submitAllAsync([params]);
    markStage(req, 'submit');
    if (clientGone(req, res)) return abortAll(handles);
    setPdHeaders(res, handles);
    const fmt = chatFormat({
      id: `chatcmpl-${r.request_id ?? randomUUID().replaceAll('-', '')}`,
      created: nowS(),
      model: r.model,
      promptIds: params.promptIds,
      echoText: chatEcho(r),
      withUsage: r.stream_options?.include_usage === true,
      opts: responseOptions(r, 'chat'),
      display: this.display(r),
      tools: tools.use.parser ? { parser: tools.use.parser, callsFinish: tools.use.callsFinish } : null,
    });
    await this.respond(r, req, res, handles, fmt);
  }

  private async encodeChat(r: ChatRequest, tools: ChatToolUse, control: TaskControl): Promise<number[]> {
    const messages = toTemplateMessages(r.messages, this.templateStyle);
    const extra = { ...r.chat_template_kwargs, ...(tools.templateTools ? { tools: tools.templateTools } : {}) };
    const toolTexts = tools.templateTools ? [JSON.stringify(tools.templateTools)] : [];
    return encodeChatPrompt(this.ctx, messages, { ...chatGenerationPromptOf(r), extra }, 'messages', control, toolTexts);
  }

  /** Streams or collects the request's generations, n per prompt (choice i is handles[i]: prompt i / n, its sample i % n). */
  private async respond(r: CompletionRequest | ChatRequest, req: IncomingMessage, res: ServerResponse, handles: RequestHandle[], fmt: ResponseFormat): Promise<void> {
    const include = r.stream_options?.include_usage === true;
    if (r.stream) return streamGeneration(req, res, handles, fmt, { include, continuous: include && r.stream_options?.continuous_usage_stats === true });
    const body = await collectGeneration(req, res, handles, fmt);
    if (body) sendJson(res, 200, body);
  }
}

/**
 * vLLM's chat echo: the last message's content when its role is the reply's (assistant,
 * or the last message's own role without add_generation_prompt), else ''.
 */
function chatEcho(r: ChatRequest): string {
  if (!r.echo) return '';
  const last = r.messages[r.messages.length - 1]!;
  const role = (r.add_generation_prompt ?? true) ? 'assistant' : last.role;
  return last.role === role ? (contentText(last) ?? '') : '';
}

/** The client left while the request's grammar compiled: its samples end at once. */
function abortAll(handles: RequestHandle[]): void {
  for (const h of handles) h.abort();
}
