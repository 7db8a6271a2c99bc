/**
 * The HTTP server of a rank. node:http rather than a framework: the API is a handful of
 * routes, SSE needs direct control of the socket (flush per token, notice a client that
 * goes away), and it adds no dependency to the bundled binary.
 *
 * Every rank serves GET /health, /metrics, /version and /afd/stats; attention and colocated
 * ranks add the serving routes (servingRoutes.ts: the OpenAI API, /tokenize, /detokenize).
 * An API key, when set, guards everything else (/health, /metrics, /version and /afd/stats
 * stay open for probes and monitoring; CORS preflights are answered before it, as vLLM's).
 * Before anything, siteGuard.ts refuses a foreign Host on a loopback bind (DNS rebinding)
 * and a foreign Origin that --allowed-origins does not allow (cross-site requests).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { corsConfigSchema, type CorsConfig, type RankStats, type ServingStats } from '@afd/shared';
import type { Logger } from '../../util/logger.js';
import { ApiError, toApiError } from './ApiError.js';
import { BearerAuth } from './bearerAuth.js';
import { Cors } from './cors.js';
import { sendJson, sendText } from './httpUtil.js';
import { SiteGuard } from './siteGuard.js';
import { isServingPath, ROUTE_LIST, serveRoute, type ServingRouteSet } from './servingRoutes.js';
import type { PreprocessStage } from '../metrics/requestPreprocess.js';

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
  /** The serving routes (attention/colocated only); null until attached. */
  routes: ServingRouteSet | null;
  /** This rank will serve them (answer 503, not 404, on their paths before they are attached). */
  servesOpenAi?: boolean;
  /** Required bearer token for everything but the open paths; undefined = open. */
  apiKey?: string | undefined;
  /** CORS (the rank config's api section); default: no origin allowed. */
  cors?: CorsConfig | undefined;
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
  private readonly cors: Cors;
  /** Host and Origin checks; set by listen (they depend on the bound address). */
  private guard: SiteGuard | null = null;
  private routes: ServingRouteSet | null;
  private preprocess: ((stage: PreprocessStage, seconds: number) => void) | undefined;

  constructor(private readonly opts: RankHttpOptions) {
    this.routes = opts.routes;
    this.auth = new BearerAuth(opts.apiKey);
    this.cors = new Cors(opts.cors ?? corsConfigSchema.parse({}));
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 65_000;
  }

  /** Adds the serving routes once the engine is loaded (the server answers /health before). */
  /** Serves `routes` from now on; `preprocess` observes each generation's pre-processing stages. */
  attachRoutes(routes: ServingRouteSet, preprocess?: (stage: PreprocessStage, seconds: number) => void): void {
    this.routes = routes;
    this.preprocess = preprocess;
  }

  /** Binds; resolves the base URL (port 0 picks a free port). */
  listen(port: number, host: string): Promise<string> {
    this.guard = new SiteGuard({ bindHost: host, allowsOrigin: (origin) => this.cors.allowsOrigin(origin) });
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
      this.guard?.checkHost(req); // every route: a rebinding page could read /metrics too
      if (this.cors.preflight(req, res)) return;
      this.guard?.checkOrigin(req); // before routing: a foreign page's request never runs
      this.cors.decorate(req, res);
      if (req.method !== 'OPTIONS') this.auth.check(path, req); // vLLM lets OPTIONS through: a preflight carries no key
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
    if (isServingPath(path)) {
      const routes = this.routes;
      if (routes) {
        const notReady = (): string | null => {
          const r = this.opts.readiness();
          return r.ready ? null : (r.reason ?? 'starting');
        };
        return serveRoute(routes, method, path, req, res, { maxBodyBytes: this.opts.maxBodyBytes ?? 16 * 2 ** 20, notReady, preprocess: this.preprocess });
      }
      if (this.opts.servesOpenAi) {
        const r = this.opts.readiness();
        throw new ApiError(503, 'service_unavailable', `the engine is not ready (${r.reason ?? 'starting'}); retry later`, 'not_ready');
      }
      // FFN ranks are connector-driven: nothing schedules work on them over HTTP.
      throw new ApiError(404, 'invalid_request_error', `this rank runs the FFN role: it is driven by its attention ranks over the AFD connector and has no scheduler, KV cache or sampler; send ${path} requests to an attention rank or the front router`, 'ffn_role');
    }
    throw new ApiError(404, 'invalid_request_error', `no route ${method} ${path}; see ${ROUTE_LIST}`, 'not_found');
  }
}
