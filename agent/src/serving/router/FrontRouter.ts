/**
 * The topology's front door: one OpenAI endpoint that spreads requests over the attention
 * ranks. A generation request (completions, chat completions, responses) goes, among the
 * healthy ranks, to the one most likely to hold its prompt's prefix in its prefix cache:
 * the rank that last served the request's prefix key (its prompt_cache_key, else a hash of
 * the first 4 KiB of its prompt field, with its cache_salt), else the key's rendezvous
 * (highest random weight) rank; but to the rank with the fewest outstanding tokens (a size
 * estimate of the body + max_tokens of its in-flight requests) when the preferred one
 * carries both over 4096 tokens more and over twice as many (the defaults), and when the
 * request has no key. See prefixAffinity.ts for the key and its limits;
 * `prefixAffinity: false` balances by load alone. Other routes go to the least loaded
 * rank. The body is forwarded as it came (never re-serialised); responses, SSE included,
 * are relayed as they arrive.
 *
 * It survives its ranks: a 429 or 503 (or a refused connection) is retried once on another
 * healthy rank while nothing has reached the client. A 503 (the rank is not ready, e.g. its
 * block's FFN rank hung past the step deadline, or its step failed before the request's
 * first token) also takes the rank out of rotation until its /health answers 200 again; a
 * refusal that reaches the client carries Retry-After. A rank that breaks off a stream or
 * goes silent (no byte and no /health answer for `upstreamTimeoutMs`) ends the client's
 * stream with an error event and [DONE]. `drain()` stops admitting (503, /health
 * "draining"), lets in-flight requests finish until its deadline and ends the rest the
 * same way. Every other route (/v1/models, /tokenize, /version ...) is forwarded, body and
 * all, to a healthy rank; /health summarises all ranks, /metrics merges every rank's metrics
 * with a `backend` label and adds the router's own (afd:router_*, the affinity decisions
 * among them). CORS is the router's own (the launch's --allowed-origins ...): it
 * answers preflights and decorates responses; ranks never see the Origin header. Before
 * anything, siteGuard.ts refuses a foreign Host on a loopback bind (DNS rebinding) and a
 * foreign Origin that --allowed-origins does not allow; a POST body must be JSON.
 *
 * With a RequestLog, every request but probes (/health, /metrics) and preflights is
 * recorded when it ends (RequestTrace: bounded bodies, tokens, TTFT, status), refused ones
 * included; headers, and so the API key, never are.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { corsConfigSchema, type CorsConfig } from '@afd/shared';
import { ApiError, toApiError } from '../api/ApiError.js';
import { BearerAuth } from '../api/bearerAuth.js';
import { Cors } from '../api/cors.js';
import { readRawBody, requireJsonContentType, sendJson, sendText } from '../api/httpUtil.js';
import { SiteGuard } from '../api/siteGuard.js';
import { isJsonPostRoute } from '../api/servingRoutes.js';
import { Backends, ROUTER_RETRY_AFTER_S, type Backend } from './Backends.js';
import { Exchange, readSmallBody, type Attempt } from './Exchange.js';
import { PrefixAffinity, type PrefixAffinityOptions } from './prefixAffinity.js';
import type { RequestLog } from './RequestLog.js';
import { RequestTrace } from './RequestTrace.js';
import { mergeExpositions } from './promText.js';

export interface FrontRouterOptions {
  /** Base URLs of the attention (or colocated) ranks. */
  backends: string[];
  /** Health poll period (default 1000 ms). */
  healthIntervalMs?: number;
  /** A rank silent this long, that does not answer /health either, has its requests cut (default 30000 ms). */
  upstreamTimeoutMs?: number;
  /** Bearer key required on /v1 (the ranks check it again); undefined = open. */
  apiKey?: string | undefined;
  /** Extra Prometheus text appended to /metrics (e.g. afd:rank_restarts_total from the launch). */
  metricsExtra?: () => string;
  /** Largest accepted request body (default 16 MiB, as the ranks). */
  maxBodyBytes?: number;
  /** CORS (the launch's api section); default: no origin allowed. */
  cors?: CorsConfig | undefined;
  /**
   * Prefix-affine routing of generation requests (default on, with PrefixAffinityOptions'
   * defaults); false = by outstanding tokens alone.
   */
  prefixAffinity?: boolean | PrefixAffinityOptions;
  /** Where ended requests are recorded; omitted = not recorded. */
  requestLog?: RequestLog;
}

/** Paths never recorded in the request log: probes, polled all the time. */
const UNLOGGED = new Set(['/health', '/metrics']);

/** Routes that generate: routed by prefix key and token estimate, retried once on a refusing rank. */
const GENERATIONS = new Set(['/v1/completions', '/v1/chat/completions', '/v1/responses']);

/** Statuses worth one retry on another rank (busy, not ready). */
const RETRYABLE = new Set([429, 503]);

/**
 * Tokens a request will cost, for balancing only: ~4 bytes of body per prompt token, plus
 * max_tokens (max_completion_tokens, max_output_tokens) found near either end of the body
 * (clients put it after the prompt or the messages), else 256. No parse: the body may be 16 MiB, or nested past any stack.
 */
export function estimateTokens(body: Buffer): number {
  const edge = 4096;
  const text = body.length <= 2 * edge ? body.toString('latin1') : `${body.subarray(0, edge).toString('latin1')}\n${body.subarray(body.length - edge).toString('latin1')}`;
  const m = /"max(?:_completion|_output)?_tokens"\s*:\s*(\d{1,9})/.exec(text);
  return Math.ceil(body.length / 4) + (m ? Number(m[1]) : 256);
}

export class FrontRouter {
  private readonly backends: Backends;
  private readonly server: Server;
  private readonly auth: BearerAuth;
  private readonly cors: Cors;
  /** Host and Origin checks; set by listen (they depend on the bound address). */
  private guard: SiteGuard | null = null;
  private readonly exchanges = new Set<Exchange>();
  private readonly affinity: PrefixAffinity | null;
  private timer: NodeJS.Timeout | null = null;
  private draining = false;

  constructor(private readonly opts: FrontRouterOptions) {
    this.backends = new Backends(opts.backends);
    this.auth = new BearerAuth(opts.apiKey);
    this.cors = new Cors(opts.cors ?? corsConfigSchema.parse({}));
    const pa = opts.prefixAffinity ?? true;
    this.affinity = pa === false ? null : new PrefixAffinity(pa === true ? {} : pa);
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  async listen(port: number, host: string): Promise<string> {
    this.guard = new SiteGuard({ bindHost: host, allowsOrigin: (origin) => this.cors.allowsOrigin(origin) });
    await this.backends.pollHealth();
    this.timer = setInterval(() => {
      void this.backends.pollHealth();
      this.cutSilent();
    }, this.opts.healthIntervalMs ?? 1000);
    this.timer.unref();
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        const a = this.server.address() as AddressInfo;
        resolve(`http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
      });
    });
  }

  /** Points backend `index` at a new URL (its rank was restarted). */
  setBackendUrl(index: number, url: string): void {
    this.backends.setUrl(index, url);
    this.affinity?.forget(index); // a restarted rank's prefix cache is empty
    void this.backends.pollHealth();
  }

  /** Marks backend `index` down now (its rank died); the health poll brings it back. */
  markDown(index: number, reason: string): void {
    const b = this.backends.list[index];
    if (b) this.backends.markDown(b, reason);
  }

  /**
   * Graceful stop: new requests get 503 at once, in-flight ones may finish until
   * `graceMs` has passed; the rest get an error event and [DONE] (or a 503). Then closes.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    const deadline = performance.now() + graceMs;
    while (this.exchanges.size > 0 && performance.now() < deadline) {
      await Promise.race([...[...this.exchanges].map((e) => e.closed), new Promise((r) => setTimeout(r, Math.min(100, Math.max(1, deadline - performance.now()))))]);
    }
    for (const ex of this.exchanges) ex.fail(503, 'the server is shutting down and the request did not finish in its grace period; retry it', 'shutting_down');
    await this.close();
  }

  /** Stops at once: open requests are ended as drain() ends them, without waiting. */
  async close(): Promise<void> {
    this.draining = true;
    if (this.timer) clearInterval(this.timer);
    const open = [...this.exchanges];
    for (const ex of open) ex.fail(503, 'the server is shutting down; retry the request', 'shutting_down');
    // Let the last bytes (error events, [DONE]) leave before the sockets go, 100 ms at most.
    await Promise.race([Promise.all(open.map((e) => e.closed)), new Promise((r) => setTimeout(r, 100).unref())]);
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /** Outstanding tokens and requests routed (retries included) per backend (for tests and the console). */
  load(): { url: string; outstandingTokens: number; inFlight: number; requestsTotal: number; healthy: boolean }[] {
    return this.backends.list.map(({ url, outstandingTokens, inFlight, requestsTotal, healthy }) => ({ url, outstandingTokens, inFlight, requestsTotal, healthy }));
  }

  /** Requests the router is serving now. */
  get inFlight(): number {
    return this.exchanges.size;
  }

  /** Cuts requests whose rank has been silent, and not answering /health, past the timeout. */
  private cutSilent(): void {
    const limit = this.opts.upstreamTimeoutMs ?? 30_000;
    const now = performance.now();
    for (const ex of this.exchanges) {
      const b = ex.backend;
      if (!b || now - Math.max(ex.lastByteMs, b.lastAnswerMs) <= limit) continue;
      ex.fail(504, `attention rank ${b.url} sent nothing for ${(limit / 1000).toFixed(1)} s and does not answer /health (hung or cut off); the request was ended, retry it`, 'upstream_timeout');
      this.backends.markDown(b, `silent for ${(limit / 1000).toFixed(1)} s`);
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const log = this.opts.requestLog;
    const trace = log && !UNLOGGED.has(path) && req.method !== 'OPTIONS' ? new RequestTrace(req.method ?? 'GET', path) : null;
    const ex = new Exchange(req, res, trace);
    if (log && trace) void ex.closed.then(() => this.record(log, ex, trace));
    try {
      this.guard?.checkHost(req); // every route: a rebinding page could read /metrics too
      if (this.cors.preflight(req, res)) return;
      this.guard?.checkOrigin(req); // before routing: a foreign page's request never reaches a rank
      this.cors.decorate(req, res);
      if (path === '/health') return this.health(res);
      if (path === '/metrics') return await this.metrics(res);
      if (req.method !== 'OPTIONS') this.auth.check(path, req); // as the ranks: a preflight carries no key
      if (this.draining) {
        res.setHeader('connection', 'close');
        throw new ApiError(503, 'service_unavailable', 'the server is shutting down (draining); send the request to another replica or retry shortly', 'draining');
      }
      this.exchanges.add(ex);
      void ex.closed.then(() => this.exchanges.delete(ex));
      if (req.method === 'POST' && isJsonPostRoute(path)) requireJsonContentType(req); // as the ranks, before a rank is bothered
      if (req.method === 'POST' && GENERATIONS.has(path)) {
        const body = await readRawBody(req, this.opts.maxBodyBytes ?? 16 * 2 ** 20);
        trace?.request.add(body);
        await this.forward(ex, path, body);
      } else {
        await this.once(ex, this.backends.pickOrThrow(), null, 0);
      }
    } catch (err) {
      const e = toApiError(err);
      if (e.status === 413) {
        res.setHeader('connection', 'close'); // the unread body makes the connection unusable
        res.on('finish', () => req.destroy());
      }
      if (e.status === 503) res.setHeader('retry-after', String(ROUTER_RETRY_AFTER_S));
      if (!res.headersSent) ex.respondError(e);
      else ex.fail(e.status, e.message, e.code ?? 'server_error');
    }
  }

  /** Logs an ended exchange (after its response: nothing here delays the relay). */
  private record(log: RequestLog, ex: Exchange, trace: RequestTrace): void {
    try {
      log.add(trace.finish(ex.res.headersSent ? ex.res.statusCode : null, ex.res.writableFinished, ex.backend?.index ?? null));
    } catch (err) {
      process.emitWarning(`request log: could not record ${trace.method} ${trace.endpoint}: ${(err as Error).message}`);
    }
  }

  /**
   * A generation: one attempt on the rank of its prefix key (or the least loaded), and one
   * retry on the least loaded other healthy rank when the first refused before sending anything.
   */
  private async forward(ex: Exchange, path: string, body: Buffer): Promise<void> {
    const tokens = estimateTokens(body);
    const least = this.backends.pickOrThrow();
    const key = this.affinity?.keyOf(path, body) ?? null;
    const first = this.affinity ? this.affinity.choose(key, this.backends.list, least).backend : least;
    const refused = await this.once(ex, first, body, tokens, true);
    if (!refused) return;
    const second = !ex.over && !this.draining ? this.backends.pick(first) : undefined;
    if (second) {
      refused.discard();
      if (key !== null) this.affinity?.served(key, second);
      await this.once(ex, second, body, tokens);
    } else refused.send();
  }

  /**
   * One rank request. With `mayRetry`, a refusal (429 / 503 / no connection) is handed back
   * unsent, for the caller to retry elsewhere or send; otherwise everything is relayed.
   */
  private async once(ex: Exchange, b: Backend, body: Buffer | null, tokens: number, mayRetry = false): Promise<{ send(): void; discard(): void } | null> {
    b.outstandingTokens += tokens;
    b.inFlight += 1;
    b.requestsTotal += 1;
    try {
      const attempt: Attempt = await ex.send(b, body);
      if ('error' in attempt) {
        if (ex.over) return null; // the client left and the request was cancelled: not the rank's fault
        this.backends.markDown(b, `unreachable (${attempt.error.message})`);
        const fail = (): void => ex.fail(502, `attention rank ${b.url} failed: ${attempt.error.message}`, 'bad_gateway');
        if (mayRetry) return { send: fail, discard: () => undefined };
        fail();
        return null;
      }
      const { up } = attempt;
      if (mayRetry && RETRYABLE.has(up.statusCode ?? 0)) {
        const text = await readSmallBody(up);
        if (up.statusCode === 503) this.backends.markDown(b, refusalReason(text) ?? 'answered 503');
        return { send: () => ex.relayBuffered(up, text), discard: () => undefined };
      }
      if (up.statusCode === 503) this.backends.markDown(b, 'answered 503');
      await ex.relay(up);
      return null;
    } finally {
      b.outstandingTokens -= tokens;
      b.inFlight -= 1;
    }
  }

  private health(res: ServerResponse): void {
    const backends = this.backends.list.map((b) => ({ url: b.url, healthy: b.healthy, reason: b.reason }));
    if (this.draining) return sendJson(res, 503, { status: 'draining', backends });
    const healthy = this.backends.numHealthy;
    const status = healthy === backends.length ? 'ok' : healthy > 0 ? 'degraded' : 'unavailable';
    sendJson(res, healthy > 0 ? 200 : 503, { status, backends });
  }

  private async metrics(res: ServerResponse): Promise<void> {
    const list = this.backends.list;
    const texts = await Promise.all(
      list.map(async (b) => {
        try {
          const r = await fetch(`${b.url}/metrics`, { signal: AbortSignal.timeout(2000) });
          return { label: 'backend', value: String(b.index), text: r.ok ? await r.text() : '' };
        } catch {
          return { label: 'backend', value: String(b.index), text: '' };
        }
      }),
    );
    const own = [
      '# HELP afd:router_outstanding_tokens Estimated tokens of in-flight requests per backend.',
      '# TYPE afd:router_outstanding_tokens gauge',
      ...list.map((b) => `afd:router_outstanding_tokens{backend="${b.index}"} ${b.outstandingTokens}`),
      '# HELP afd:router_requests_total Requests routed per backend (retries included).',
      '# TYPE afd:router_requests_total counter',
      ...list.map((b) => `afd:router_requests_total{backend="${b.index}"} ${b.requestsTotal}`),
      '# HELP afd:router_backend_up 1 when the backend reports healthy.',
      '# TYPE afd:router_backend_up gauge',
      ...list.map((b) => `afd:router_backend_up{backend="${b.index}"} ${b.healthy ? 1 : 0}`),
      ...(this.affinity
        ? [
            '# HELP afd:router_prefix_affinity_total Generation requests by how their rank was chosen: hit (the rank that last served their prefix key), rendezvous (the key\'s rendezvous rank), overloaded (the preferred rank carried too much; the least loaded), none (no prefix key; the least loaded).',
            '# TYPE afd:router_prefix_affinity_total counter',
            ...Object.entries(this.affinity.counts).map(([outcome, n]) => `afd:router_prefix_affinity_total{outcome="${outcome}"} ${n}`),
          ]
        : []),
    ].join('\n');
    const extra = this.opts.metricsExtra?.() ?? '';
    sendText(res, 200, `${mergeExpositions(texts)}${own}\n${extra}`, 'text/plain; version=0.0.4; charset=utf-8');
  }
}

/** The message of a rank's JSON error body, if it is one. */
function refusalReason(body: Buffer): string | null {
  try {
    const m = (JSON.parse(body.toString('utf8')) as { error?: { message?: unknown } }).error?.message;
    return typeof m === 'string' ? m : null;
  } catch {
    return null;
  }
}

export interface RouterHandleOptions {
  apiKey?: string | undefined;
  requestLog?: RequestLog;
  cors?: CorsConfig | undefined;
  upstreamTimeoutMs?: number;
  metricsExtra?: () => string;
  prefixAffinity?: boolean | PrefixAffinityOptions;
}

/** RouterFactory for the agent's TopologyRun: starts a router and returns its handle. */
export async function startFrontRouter(backends: string[], host: string, port: number, o: RouterHandleOptions = {}): Promise<FrontRouter & { url: string }> {
  const router = new FrontRouter({ backends, ...o });
  const url = await router.listen(port, host);
  return Object.assign(router, { url });
}
