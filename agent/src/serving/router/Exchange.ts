/**
 * One client request at the front router and the rank request(s) serving it. The rank's
 * response is relayed as it comes; an SSE stream is relayed one whole event at a time, so
 * that when the rank breaks off, goes silent or the router drains, the client still gets
 * a well-formed error event and `data: [DONE]` instead of a cut socket. A client that
 * goes away cancels the rank request (which frees the rank's KV blocks).
 *
 * A /v1/responses stream is framed as OpenAI's Responses API frames it: named events,
 * complete at its final event (response.completed, response.incomplete, response.failed)
 * with no [DONE]; the router ends a broken one with an `error` event whose
 * sequence_number follows the last one relayed.
 *
 * With a RequestTrace, what the client sent and got (error bodies and events included)
 * is kept, bounded, for the router's request log.
 */
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { ApiError } from '../api/ApiError.js';
import { sendJson } from '../api/httpUtil.js';
import { ROUTER_RETRY_AFTER_S, type Backend } from './Backends.js';
import type { RequestTrace } from './RequestTrace.js';

/** What a rank request came to before anything reached the client. */
export type Attempt = { up: IncomingMessage } | { error: Error };

/** The final event of a Responses stream. */
const RESPONSES_END = /^event: response\.(?:completed|incomplete|failed)$/m;
/** The sequence numbers of Responses stream events; the last one relayed is kept. */
const SEQUENCE = /"sequence_number":(\d+)/g;

/** Hop-by-hop headers: never relayed. */
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade']);

/**
 * The rank's headers to relay with `status`: hop-by-hop ones dropped; a refusal (429, 503)
 * keeps the rank's Retry-After, else gets the router's (a client should know when to retry).
 */
function relayHeaders(h: IncomingHttpHeaders, status: number): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !HOP.has(k)) out[k] = v;
  if ((status === 429 || status === 503) && out['retry-after'] === undefined) out['retry-after'] = String(ROUTER_RETRY_AFTER_S);
  return out;
}

export class Exchange {
  /** The rank serving it now (null while the body is read or between attempts). */
  backend: Backend | null = null;
  /** performance.now() of the last byte from the rank (or the start of the attempt). */
  lastByteMs = performance.now();
  private upstream: ClientRequest | null = null;
  private sse = false;
  /** The stream is a Responses API one (named events, no [DONE]). */
  private readonly responses: boolean;
  /** The last sequence_number relayed on a Responses stream (-1: none yet). */
  private lastSequence = -1;
  private ended = false;
  /** Whether the client response is over (finished, failed or the client left). */
  readonly closed: Promise<void>;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** Records the exchange for the request log; null = not logged. */
    readonly trace: RequestTrace | null = null,
  ) {
    this.responses = (req.url ?? '').split('?')[0] === '/v1/responses';
    this.closed = new Promise((resolve) =>
      res.once('close', () => {
        this.ended = true;
        // The client went away before the end: cancel upstream so the rank aborts the request.
        if (!res.writableFinished) this.upstream?.destroy();
        resolve();
      }),
    );
  }

  /** True once the client has its whole response, or is gone. */
  get over(): boolean {
    return this.ended || this.res.writableEnded || this.res.destroyed;
  }

  /** Sends the request to `backend`; resolves at its response headers or its failure. Nothing reaches the client. */
  send(backend: Backend, body: Buffer | null): Promise<Attempt> {
    this.backend = backend;
    this.lastByteMs = performance.now();
    return new Promise((resolve) => {
      // The client's content type as it came (the rank refuses a body that is not JSON, as vLLM does).
      const headers: Record<string, string> = {};
      if (this.req.headers['content-type']) headers['content-type'] = this.req.headers['content-type'];
      if (this.req.headers.authorization) headers['authorization'] = this.req.headers.authorization;
      if (body !== null) headers['content-length'] = String(body.length);
      else if (this.req.headers['content-length']) headers['content-length'] = this.req.headers['content-length'];
      const upstream = httpRequest(new URL(this.req.url ?? '/', backend.url), { method: this.req.method, headers }, (up) => {
        this.lastByteMs = performance.now();
        resolve({ up });
      });
      upstream.on('error', (error) => resolve({ error }));
      this.upstream = upstream;
      if (this.over) upstream.destroy();
      else if (body !== null) upstream.end(body);
      else {
        // Routes other than completions: the body passes through untouched (and is kept, bounded, for the log).
        const trace = this.trace;
        if (trace) this.req.on('data', (c: Buffer) => trace.request.add(c));
        this.req.pipe(upstream);
      }
    });
  }

  /** Sends an already-read response (a refusal not worth retrying) to the client. */
  relayBuffered(up: IncomingMessage, body: Buffer): void {
    if (this.over) return;
    const status = up.statusCode ?? 502;
    const headers = relayHeaders(up.headers, status);
    headers['content-length'] = String(body.length);
    this.res.writeHead(status, headers);
    this.trace?.sent(body);
    this.res.end(body);
  }

  /** Relays the rank's response as it arrives; resolves when the client response is over. */
  relay(up: IncomingMessage): Promise<void> {
    if (this.over) {
      up.destroy();
      return this.closed;
    }
    const status = up.statusCode ?? 502;
    this.trace?.backendHeaders(up.headers);
    this.sse = /^text\/event-stream/i.test(String(up.headers['content-type'] ?? '')) && status === 200;
    this.res.writeHead(status, relayHeaders(up.headers, status));
    if (this.sse) {
      this.res.flushHeaders();
      this.trace?.streaming();
    }
    const url = this.backend?.url ?? 'the attention rank';
    let pending = '';
    let sawDone = false;
    const write = (text: string | Buffer): void => {
      if (this.over) return;
      this.trace?.sent(text);
      if (!this.res.write(text)) {
        up.pause();
        this.res.once('drain', () => up.resume());
      }
    };
    if (this.sse) up.setEncoding('utf8');
    up.on('data', (chunk: string | Buffer) => {
      this.lastByteMs = performance.now();
      if (!this.sse) return write(chunk);
      pending += chunk as string;
      const cut = pending.lastIndexOf('\n\n');
      if (cut < 0) return;
      const events = pending.slice(0, cut + 2);
      pending = pending.slice(cut + 2);
      if (this.responses) {
        for (const m of events.matchAll(SEQUENCE)) this.lastSequence = Number(m[1]);
        if (RESPONSES_END.test(events)) sawDone = true;
      } else if (events.includes('data: [DONE]')) sawDone = true;
      write(events);
    });
    up.on('end', () => {
      if (!this.sse || sawDone) this.res.end();
      else this.fail(502, `attention rank ${url} ended the stream without ${this.responses ? 'its final event' : '[DONE]'}`, 'bad_gateway');
    });
    up.on('close', () => {
      if (up.complete) return;
      this.fail(502, `attention rank ${url} broke off the response (it stopped or crashed); retry the request`, 'bad_gateway');
    });
    up.on('error', () => undefined); // reported by 'close' with complete === false
    return this.closed;
  }

  /**
   * Ends the client response with an error: as JSON when nothing was sent yet, as an SSE
   * error event and [DONE] on a stream (an `error` event on a Responses stream), else by closing the connection (a half-sent JSON
   * body cannot be mended). Cancels the rank request.
   */
  fail(status: number, message: string, code: string): void {
    if (this.upstream && !this.upstream.destroyed) this.upstream.destroy();
    if (this.over) return;
    const err = new ApiError(status, status === 503 ? 'service_unavailable' : 'server_error', message, code);
    if (!this.res.headersSent) {
      if (status === 503 || status === 429) this.res.setHeader('retry-after', String(ROUTER_RETRY_AFTER_S));
      this.respondError(err);
      return;
    }
    this.trace?.failed(message);
    if (this.sse && this.responses) {
      const event = { type: 'error', code, message, param: null, sequence_number: this.lastSequence + 1 };
      this.endWith(`event: error\ndata: ${JSON.stringify(event)}\n\n`);
    } else if (this.sse) {
      this.endWith(`data: ${JSON.stringify(err.toJSON())}\n\ndata: [DONE]\n\n`);
    } else {
      this.res.destroy();
    }
  }

  /** Answers with an error body (nothing was sent yet). */
  respondError(err: ApiError): void {
    this.trace?.failed(err.message);
    this.trace?.sent(JSON.stringify(err.toJSON()));
    sendJson(this.res, err.status, err.toJSON());
  }

  private endWith(text: string): void {
    this.trace?.sent(text);
    this.res.end(text);
  }
}

/** Reads a small response body (a 429 / 503 refusal), at most `limit` bytes. */
export async function readSmallBody(up: IncomingMessage, limit = 64 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of up as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > limit) break;
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}
