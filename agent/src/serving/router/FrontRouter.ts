/**
 * The topology's front door: one OpenAI endpoint that spreads requests over the attention
 * ranks. Each request goes to the healthy rank with the fewest outstanding tokens (prompt
 * estimate + max_tokens of its in-flight requests); responses, SSE included, are piped
 * through unchanged, and a client that goes away cancels the upstream request (which frees
 * the rank's KV blocks). /v1/models comes from a healthy rank, /health summarises all
 * ranks, /metrics merges every rank's metrics with a `backend` label.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, toApiError } from '../api/ApiError.js';
import { readJsonBody, sendJson, sendText } from '../api/httpUtil.js';
import { mergeExpositions } from './promText.js';

interface Backend {
  url: string;
  healthy: boolean;
  reason: string | null;
  outstandingTokens: number;
  inFlight: number;
  requestsTotal: number;
}

export interface FrontRouterOptions {
  /** Base URLs of the attention (or colocated) ranks. */
  backends: string[];
  /** Health poll period (default 1000 ms). */
  healthIntervalMs?: number;
}

/** Rough prompt size for balancing: ~4 characters per token. */
function estimateTokens(body: unknown): number {
  if (typeof body !== 'object' || body === null) return 0;
  const b = body as { prompt?: unknown; messages?: unknown; max_tokens?: unknown; max_completion_tokens?: unknown };
  const promptChars = JSON.stringify(b.prompt ?? b.messages ?? '').length;
  const maxTokens = typeof b.max_completion_tokens === 'number' ? b.max_completion_tokens : typeof b.max_tokens === 'number' ? b.max_tokens : 256;
  return Math.ceil(promptChars / 4) + maxTokens;
}

export class FrontRouter {
  private readonly backends: Backend[];
  private readonly server: Server;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: FrontRouterOptions) {
    if (opts.backends.length === 0) throw new Error('FrontRouter needs at least one backend URL');
    this.backends = opts.backends.map((url) => ({ url: url.replace(/\/$/, ''), healthy: true, reason: null, outstandingTokens: 0, inFlight: 0, requestsTotal: 0 }));
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  async listen(port: number, host: string): Promise<string> {
    await this.pollHealth();
    this.timer = setInterval(() => void this.pollHealth(), this.opts.healthIntervalMs ?? 1000);
    this.timer.unref();
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        const a = this.server.address() as AddressInfo;
        resolve(`http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
      });
    });
  }

  close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
      setTimeout(() => this.server.closeAllConnections(), 100).unref();
    });
  }

  /** Outstanding tokens per backend (for tests and the console). */
  load(): { url: string; outstandingTokens: number; inFlight: number; healthy: boolean }[] {
    return this.backends.map(({ url, outstandingTokens, inFlight, healthy }) => ({ url, outstandingTokens, inFlight, healthy }));
  }

  private async pollHealth(): Promise<void> {
    await Promise.all(
      this.backends.map(async (b) => {
        try {
          const res = await fetch(`${b.url}/health`, { signal: AbortSignal.timeout(2000) });
          const body = (await res.json().catch(() => ({}))) as { reason?: string };
          b.healthy = res.ok;
          b.reason = res.ok ? null : (body.reason ?? `status ${res.status}`);
        } catch (err) {
          b.healthy = false;
          b.reason = `unreachable (${(err as Error).message})`;
        }
      }),
    );
  }

  private pick(): Backend {
    const healthy = this.backends.filter((b) => b.healthy);
    if (healthy.length === 0) {
      throw new ApiError(503, 'service_unavailable', `no attention rank is ready (${this.backends.map((b) => `${b.url}: ${b.reason}`).join('; ')}); retry later`, 'not_ready');
    }
    return healthy.reduce((best, b) => (b.outstandingTokens < best.outstandingTokens || (b.outstandingTokens === best.outstandingTokens && b.inFlight < best.inFlight) ? b : best));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    try {
      if (path === '/health') return this.health(res);
      if (path === '/metrics') return await this.metrics(res);
      if (req.method === 'POST' && (path === '/v1/completions' || path === '/v1/chat/completions')) {
        const body = await readJsonBody(req, 16 * 2 ** 20);
        const backend = this.pick();
        const tokens = estimateTokens(body);
        backend.outstandingTokens += tokens;
        backend.inFlight += 1;
        backend.requestsTotal += 1;
        try {
          await this.proxy(req, res, backend, JSON.stringify(body));
        } finally {
          backend.outstandingTokens -= tokens;
          backend.inFlight -= 1;
        }
        return;
      }
      await this.proxy(req, res, this.pick(), null);
    } catch (err) {
      const e = toApiError(err);
      if (e.status === 413) {
        res.setHeader('connection', 'close'); // the unread body makes the connection unusable
        res.on('finish', () => req.destroy());
      }
      if (!res.headersSent) sendJson(res, e.status, e.toJSON());
      else res.end();
    }
  }

  private health(res: ServerResponse): void {
    const healthy = this.backends.filter((b) => b.healthy).length;
    const status = healthy === this.backends.length ? 'ok' : healthy > 0 ? 'degraded' : 'unavailable';
    sendJson(res, healthy > 0 ? 200 : 503, { status, backends: this.backends.map((b) => ({ url: b.url, healthy: b.healthy, reason: b.reason })) });
  }

  private async metrics(res: ServerResponse): Promise<void> {
    const texts = await Promise.all(
      this.backends.map(async (b, i) => {
        try {
          const r = await fetch(`${b.url}/metrics`, { signal: AbortSignal.timeout(2000) });
          return { label: 'backend', value: String(i), text: r.ok ? await r.text() : '' };
        } catch {
          return { label: 'backend', value: String(i), text: '' };
        }
      }),
    );
    const own = [
      '# HELP afd:router_outstanding_tokens Estimated tokens of in-flight requests per backend.',
      '# TYPE afd:router_outstanding_tokens gauge',
      ...this.backends.map((b, i) => `afd:router_outstanding_tokens{backend="${i}"} ${b.outstandingTokens}`),
      '# HELP afd:router_requests_total Requests routed per backend.',
      '# TYPE afd:router_requests_total counter',
      ...this.backends.map((b, i) => `afd:router_requests_total{backend="${i}"} ${b.requestsTotal}`),
      '# HELP afd:router_backend_up 1 when the backend reports healthy.',
      '# TYPE afd:router_backend_up gauge',
      ...this.backends.map((b, i) => `afd:router_backend_up{backend="${i}"} ${b.healthy ? 1 : 0}`),
    ].join('\n');
    sendText(res, 200, mergeExpositions(texts) + own + '\n', 'text/plain; version=0.0.4; charset=utf-8');
  }

  /** Pipes the request to the backend and its response (SSE included) back. */
  private proxy(req: IncomingMessage, res: ServerResponse, backend: Backend, body: string | null): Promise<void> {
    return new Promise((resolve) => {
      const target = new URL(req.url ?? '/', backend.url);
      const headers: Record<string, string> = { 'content-type': req.headers['content-type'] ?? 'application/json' };
      if (req.headers.authorization) headers['authorization'] = req.headers.authorization;
      if (body !== null) headers['content-length'] = String(Buffer.byteLength(body));
      else if (req.headers['content-length']) headers['content-length'] = req.headers['content-length'];
      const upstream = httpRequest(target, { method: req.method, headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        up.on('end', () => resolve());
        up.on('error', () => resolve());
      });
      upstream.on('error', (err) => {
        if (!res.headersSent) {
          const e = new ApiError(502, 'server_error', `attention rank ${backend.url} failed: ${err.message}`, 'bad_gateway');
          sendJson(res, e.status, e.toJSON());
        } else res.end();
        resolve();
      });
      // The client went away: cancel upstream so the rank aborts the request and frees its blocks.
      res.on('close', () => {
        if (!res.writableFinished) upstream.destroy();
        resolve();
      });
      if (body !== null) upstream.end(body);
      else req.pipe(upstream); // other routes: pass the body through untouched
    });
  }
}

/** RouterFactory for the agent's TopologyRun: starts a router and returns its handle. */
export async function startFrontRouter(backends: string[], host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const router = new FrontRouter({ backends });
  const url = await router.listen(port, host);
  return { url, close: () => router.close() };
}
