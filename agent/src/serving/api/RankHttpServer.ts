/**
 * The HTTP server of a rank. node:http rather than a framework: the API is a handful of
 * routes, SSE needs direct control of the socket (flush per token, notice a client that
 * goes away), and it adds no dependency to the bundled binary.
 *
 * Every rank serves GET /health, /metrics, /version and /afd/stats; attention and colocated
 * ranks add the OpenAI routes. An API key, when set, guards the OpenAI API (/health,
 * /metrics, /version and /afd/stats stay open for probes and monitoring).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { RankStats, ServingStats } from '@afd/shared';
import type { Logger } from '../../util/logger.js';
import { ApiError, toApiError } from './ApiError.js';
import { BearerAuth } from './bearerAuth.js';
import { readJsonBody, sendJson, sendText } from './httpUtil.js';
import type { OpenAiRoutes } from './openaiRoutes.js';

export interface Readiness {
  ready: boolean;
  /** Why not ready (loading, FFN peer lost, ...); null when ready. */
  reason: string | null;
}

export interface RankHttpOptions {
  readiness: () => Readiness;
  registry: Registry;
  stats: () => RankStats;
  /**
   * Serving numbers (attention/colocated), added to /afd/stats as an extra `serving` key:
   * the body still parses as RankStats, and readers that know the key get both.
   */
  serving?: () => ServingStats | null;
  /** The OpenAI routes (attention/colocated only); null until attached. */
  openai: OpenAiRoutes | null;
  /** This rank will serve the OpenAI API (answer 503, not 404, on /v1 before it is attached). */
  servesOpenAi?: boolean;
  /** Required bearer token for /v1/* and /afd/*; undefined = open. */
  apiKey?: string | undefined;
  version: string;
  log?: Logger | undefined;
  /** Largest accepted request body (default 16 MiB). */
  maxBodyBytes?: number;
}

/** Seconds a client is told to wait before retrying a 429 or 503. */
export const RETRY_AFTER_S = 1;

export class RankHttpServer {
  private readonly server: Server;
  private readonly auth: BearerAuth;
  private openai: OpenAiRoutes | null;

  constructor(private readonly opts: RankHttpOptions) {
    this.openai = opts.openai;
    this.auth = new BearerAuth(opts.apiKey);
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 65_000;
  }

  /** Adds the OpenAI routes once the engine is loaded (the server answers /health before). */
  attachOpenAi(routes: OpenAiRoutes): void {
    this.openai = routes;
  }

  /** Binds; resolves the base URL (port 0 picks a free port). */
  listen(port: number, host: string): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const addr = this.server.address() as AddressInfo;
        const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
        resolve(`http://${h}:${addr.port}`);
      });
    });
  }

  /** Stops accepting connections and ends idle keep-alive ones. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
      setTimeout(() => this.server.closeAllConnections(), 100).unref(); // requests were already ended by the caller
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    try {
      this.auth.check(path, req);
      await this.route(req.method ?? 'GET', path, req, res);
    } catch (err) {
      const apiErr = toApiError(err);
      if (apiErr.status >= 500) this.opts.log?.error({ err, path }, 'request failed');
      if (apiErr.status === 413) {
        // The rest of the body is never read: close the connection instead of reusing it.
        res.setHeader('connection', 'close');
        res.on('finish', () => req.destroy());
      }
      if (res.headersSent) {
        if (!res.writableEnded) res.end(`data: ${JSON.stringify(apiErr.toJSON())}\n\ndata: [DONE]\n\n`);
        return;
      }
      // Busy or not ready: worth retrying soon (the front router retries on another rank first).
      if (apiErr.status === 429 || apiErr.status === 503) res.setHeader('retry-after', String(RETRY_AFTER_S));
      sendJson(res, apiErr.status, apiErr.toJSON());
    }
  }

  private async route(method: string, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const get = method === 'GET' || method === 'HEAD';
    if (path === '/health' && get) {
      const r = this.opts.readiness();
      return sendJson(res, r.ready ? 200 : 503, r.ready ? { status: 'ok' } : { status: 'unavailable', reason: r.reason });
    }
    if (path === '/metrics' && get) return sendText(res, 200, await this.opts.registry.metrics(), this.opts.registry.contentType);
    if (path === '/version' && get) return sendJson(res, 200, { version: this.opts.version });
    if (path === '/afd/stats' && get) {
      const serving = this.opts.serving?.() ?? null;
      return sendJson(res, 200, serving ? { ...this.opts.stats(), serving } : this.opts.stats());
    }
    const openai = this.openai;
    if (path.startsWith('/v1/') && !openai && this.opts.servesOpenAi) {
      const r = this.opts.readiness();
      throw new ApiError(503, 'service_unavailable', `the engine is not ready (${r.reason ?? 'starting'}); retry later`, 'not_ready');
    }
    if (openai && path.startsWith('/v1/')) {
      if (path === '/v1/models' && get) return openai.models(res);
      if (method === 'POST' && (path === '/v1/completions' || path === '/v1/chat/completions')) {
        const body = await readJsonBody(req, this.opts.maxBodyBytes ?? 16 * 2 ** 20);
        const r = this.opts.readiness();
        if (!r.ready) throw new ApiError(503, 'service_unavailable', `the engine is not ready (${r.reason}); retry later`, 'not_ready');
        return path === '/v1/completions' ? openai.completions(body, req, res) : openai.chat(body, req, res);
      }
      if (['/v1/models', '/v1/completions', '/v1/chat/completions'].includes(path)) {
        throw new ApiError(405, 'invalid_request_error', `${method} is not allowed on ${path}`, 'method_not_allowed');
      }
    }
    if (path.startsWith('/v1/') && !this.opts.servesOpenAi) {
      // FFN ranks are connector-driven: nothing schedules work on them over HTTP.
      throw new ApiError(404, 'invalid_request_error', `this rank runs the FFN role: it is driven by its attention ranks over the AFD connector and has no scheduler, KV cache or sampler; send ${path} requests to an attention rank or the front router`, 'ffn_role');
    }
    throw new ApiError(404, 'invalid_request_error', `no route ${method} ${path}; see /v1/models, /v1/completions, /v1/chat/completions, /health, /metrics`, 'not_found');
  }
}
