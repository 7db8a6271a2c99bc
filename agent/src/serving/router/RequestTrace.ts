/**
 * One exchange as the request log will record it, filled in while the router relays it:
 * when it arrived, bounded copies of the request and response bodies (what the client sent,
 * what the client got: a stream's events as relayed, error events included), when the first
 * output event went out, what went wrong. The hot path only keeps references to chunks and
 * looks for the first output event; `finish()` reads the bodies once, after the exchange.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { REQUEST_BODY_HEAD_CHARS, REQUEST_BODY_TAIL_CHARS, type RequestSummary } from '@afd/shared';
import { PD_HEADERS } from '../api/pdHeaders.js';
import { BoundedCapture } from './BoundedCapture.js';
import { requestModel, responseFacts } from './exchangeFacts.js';
import type { LoggedExchange } from './RequestLog.js';

/** A Responses API event that carries output (the first is its time to first token). */
const RESPONSES_OUTPUT = /^event: response\.[a-z_.]*delta$/m;

export class RequestTrace {
  readonly startedAtMs = Date.now();
  private readonly t0 = performance.now();
  readonly request = new BoundedCapture(REQUEST_BODY_HEAD_CHARS, REQUEST_BODY_TAIL_CHARS);
  private readonly response = new BoundedCapture(REQUEST_BODY_HEAD_CHARS, REQUEST_BODY_TAIL_CHARS);
  private stream = false;
  private ttftMs: number | null = null;
  private error: string | null = null;
  private pd: RequestSummary['pd'];

  constructor(
    readonly method: string,
    readonly endpoint: string,
  ) {}

  /** The answering rank's response headers: its prefill/decode disaggregation facts (pdHeaders.ts). */
  backendHeaders(headers: IncomingHttpHeaders): void {
    this.pd = pdFactsOf(headers);
  }

  /** The response is an event stream. */
  streaming(): void {
    this.stream = true;
  }

  /** Bytes sent to the client (a stream: whole events). */
  sent(chunk: string | Buffer): void {
    if (this.stream && this.ttftMs === null && typeof chunk === 'string' && this.carriesOutput(chunk)) this.ttftMs = performance.now() - this.t0;
    this.response.add(chunk);
  }

  /** Whether stream events carry output: any chunk of chat or completions (the first has the first token), a delta of the Responses API. */
  private carriesOutput(events: string): boolean {
    if (this.endpoint === '/v1/responses') return RESPONSES_OUTPUT.test(events);
    return events.startsWith('data: {') && !events.startsWith('data: {"error"');
  }

  /** What went wrong at the router (the first reason is kept). */
  failed(message: string): void {
    this.error ??= message;
  }

  /**
   * The record, once the client's response is over: `status` is what the client got (null:
   * nothing), `finished` whether the whole response was written, `backend` the rank that answered.
   */
  finish(status: number | null, finished: boolean, backend: number | null): LoggedExchange {
    const requestBody = this.request.text();
    const responseBody = this.response.text();
    const facts = responseFacts(responseBody, this.stream);
    const bodyError = status !== null && status >= 400 ? facts.error : null;
    const error = this.error ?? bodyError ?? (this.stream ? facts.error : null) ?? (finished ? null : 'the client closed the connection before the response ended');
    return {
      summary: {
        startedAtMs: this.startedAtMs,
        method: this.method,
        endpoint: this.endpoint,
        model: requestModel(requestBody) ?? facts.model,
        stream: this.stream,
        status,
        promptTokens: facts.promptTokens,
        completionTokens: facts.completionTokens,
        ttftMs: this.ttftMs,
        durationMs: performance.now() - this.t0,
        finishReason: facts.finishReason,
        backend,
        error,
        ...(this.pd ? { pd: this.pd } : {}),
      },
      requestBody,
      requestBytes: this.request.totalBytes,
      responseBody,
      responseBytes: this.response.totalBytes,
    };
  }
}

/** The per-prompt prefill facts of an answer's x-afd-* headers, or undefined without them. */
export function pdFactsOf(headers: IncomingHttpHeaders): RequestSummary['pd'] {
  const list = (name: string): string[] => String(headers[name] ?? '').split(',');
  const ranks = headers[PD_HEADERS.rank];
  if (ranks === undefined) return undefined;
  const bytes = list(PD_HEADERS.bytes);
  const transfer = list(PD_HEADERS.transferMs);
  const prefill = list(PD_HEADERS.prefillMs);
  const transports = list(PD_HEADERS.transport);
  const transportOf = (v: string | undefined): 'peer' | 'tcp' | null => (v === 'peer' || v === 'tcp' ? v : null);
  const num = (v: string | undefined): number | null => (v === undefined || v === '-' || v === '' || !Number.isFinite(Number(v)) || Number(v) < 0 ? null : Number(v));
  return list(PD_HEADERS.rank).map((r, i) => {
    const rank = num(r);
    return { prefillRank: rank === null ? null : Math.floor(rank), kvBytes: num(bytes[i]) === null ? null : Math.floor(num(bytes[i])!), transferMs: num(transfer[i]), prefillMs: num(prefill[i]), transport: transportOf(transports[i]) };
  });
}
