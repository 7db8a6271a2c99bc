/**
 * POST /v1/responses, stateless (nothing is stored; every request is store: false), on the
 * chat machinery: the request's conversation is rendered by the model's chat template and
 * sampled exactly as a chat completion (requestPlan.ts), then shaped as a Response object
 * (responseOutput.ts) or streamed as named events (ResponseEvents.ts).
 */
import { setPdHeaders } from '../pdHeaders.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ToolCallParserName } from '@afd/shared';
import { resolveToolParser } from '../../tools/toolParsers.js';
import type { RequestHandle } from '../../ServingEngine.js';
import { ServingError } from '../../ServingError.js';
import { ApiError, fromServingError, toApiError } from '../ApiError.js';
import { clientGone, encodeChatPrompt, encodeControl } from '../chatPrompt.js';
import { markStage } from '../../metrics/requestPreprocess.js';
import { ABORTED, abortOnDisconnect, collectOne } from '../generationResponse.js';
import { sendJson } from '../httpUtil.js';
import { chatLogprobs, type TokenDisplay } from '../logprobsFormat.js';
import { checkServedModel } from '../modelRoutes.js';
import type { OpenAiContext } from '../openaiRoutes.js';
import { toGenerateParams } from '../requestParams.js';
import { usageOf } from '../responseFormat.js';
import { endSseEvents, sendSseEvent, startSse } from '../sse.js';
import type { TokenLogprob } from '../../scheduler/logprobRows.js';
import type { GenerateParams } from '../../ServingEngine.js';
import type { OutputParsing } from './outputParser.js';
import { responseToolUse } from './responseToolUse.js';
import { checkResponseFields } from './responseFields.js';
import { ResponseEvents, type ResponseEvent } from './ResponseEvents.js';
import { newId, outputItems, responseBody, responseShell, responseUsage, type ResponseShell } from './responseOutput.js';
import { checkResponseValues } from './refusedValues.js';
import { planResponse, type ResponsePlan } from './requestPlan.js';
import { responsesRequestSchema } from './responsesSchema.js';

export type ResponsesContext = OpenAiContext;

const nowS = (): number => Math.floor(Date.now() / 1000);

/** Everything a generation's response needs besides its events. */
interface Answer {
  shell: ResponseShell;
  plan: ResponsePlan;
  parsing: OutputParsing;
  parallelToolCalls: boolean;
}

export class ResponsesRoutes {
  private readonly display: TokenDisplay;

  /** The parser of tool_choice "auto" output (null: the template has no markup the server knows, and none was set). */
  private readonly toolParser: ToolCallParserName | null;

  constructor(private readonly ctx: ResponsesContext) {
    this.display = { tokenString: (id) => ctx.tokenizer.tokenString(id), asIds: false };
    this.toolParser = resolveToolParser(ctx.toolCallParser ?? 'auto', ctx.tokenizer.chatTemplate?.source ?? null);
  }

  async create(body: unknown, req: IncomingMessage, res: ServerResponse): Promise<void> {
    checkResponseFields(body);
    checkResponseValues(body);
    const r = responsesRequestSchema.parse(body);
    checkServedModel(this.ctx, r.model);
    const plan = planResponse(r);
    const tools = responseToolUse(plan.tools, r.parallel_tool_calls ?? true, this.toolParser);
    if (tools.grammar && plan.grammar) {
      throw ApiError.badRequest(`tool_choice forces a function call, which ${plan.grammar.param} would constrain too; send one of them`, 'tool_choice', 'invalid_value');
    }
    const promptIds = await encodeChatPrompt(this.ctx, plan.messages, { addGenerationPrompt: true, extra: plan.templateVars }, 'input', encodeControl(this.ctx, req, res, false));
    markStage(req, 'prompt');
    if (clientGone(req, res)) return;
    const params = toGenerateParams(plan.chat, promptIds, 'chat');
    const grammar = tools.grammar ?? plan.grammar;
    if (grammar) params.grammar = grammar;
    if (tools.keepSpecialTokens) params.skipSpecialTokens = false; // the parser reads the markup
    this.checkRequest(params);
    const [handle] = await this.ctx.serving.submitAllAsync([params]);
    markStage(req, 'submit');
    if (clientGone(req, res)) return handle!.abort();
    setPdHeaders(res, [handle!]);
    const answer: Answer = { shell: responseShell(r, r.request_id ?? newId('resp'), nowS()), plan, parsing: tools.parsing, parallelToolCalls: r.parallel_tool_calls ?? true };
    abortOnDisconnect(req, res, [handle!]);
    if (r.stream) return this.stream(res, handle!, answer);
    return this.collect(res, handle!, answer);
  }

  /** The serving layer's checks, naming this route's fields (input, max_output_tokens). */
  private checkRequest(params: GenerateParams): void {
    try {
      this.ctx.serving.checkRequest(params, 'input');
    } catch (err) {
      if (!(err instanceof ServingError) || err.param !== 'max_tokens') throw err;
      throw new ServingError(err.kind, err.message.replace('max_tokens', 'max_output_tokens'), 'max_output_tokens');
    }
  }

  private logprobs(a: Answer, rows: readonly TokenLogprob[] | null | undefined): object[] {
    return a.plan.logprobs && rows ? chatLogprobs(rows, this.display).content : [];
  }

  private async collect(res: ServerResponse, handle: RequestHandle, a: Answer): Promise<void> {
    let done: Awaited<ReturnType<typeof collectOne>>;
    try {
      done = await collectOne(handle);
    } catch (err) {
      handle.abort();
      throw err;
    }
    if (!done) return;
    const status = done.finish === 'length' ? 'incomplete' : 'completed';
    const output = outputItems(a.parsing.parse(done.text), status, this.logprobs(a, done.logprobs), a.parallelToolCalls);
    sendJson(res, 200, responseBody(a.shell, { status, output, usage: responseUsage(done.usage) }));
  }

  private async stream(res: ServerResponse, handle: RequestHandle, a: Answer): Promise<void> {
    startSse(res);
    const events = new ResponseEvents(a.shell, a.parallelToolCalls);
    const parser = a.parsing.streaming();
    const send = (list: ResponseEvent[]): void => list.forEach((e) => sendSseEvent(res, e));
    send(events.start());
    try {
      for await (const ev of handle.events) {
        if (ev.type === 'delta') {
          send(events.push(parser.push(ev.text), this.logprobs(a, ev.logprobs)));
        } else if (ev.type === 'done') {
          // Aborted: the client is gone (the writes are no-ops) or the server is stopping (tell the client).
          if (ev.finishReason === 'abort') {
            send(events.fail(new ApiError(503, 'service_unavailable', ABORTED, 'aborted')));
            break;
          }
          send(events.push(parser.end()));
          const status = ev.finishReason === 'length' ? 'incomplete' : 'completed';
          send(events.finish(status, responseUsage(usageOf(ev.promptTokens, ev.completionTokens, ev.cachedTokens))));
        } else {
          send(events.fail(fromServingError(ev.error)));
          break;
        }
      }
    } catch (err) {
      // A parser that breaks its contract (ResponseEvents throws): end the generation and say so.
      handle.abort();
      send(events.fail(toApiError(err)));
    }
    endSseEvents(res);
  }
}
