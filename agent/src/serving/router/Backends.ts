/**
 * The front router's view of its ranks: URL, health (polled from /health, and marked down
 * at once when a request finds a rank refusing or unreachable), when the rank last
 * answered at all (a 503 is an answer: the process is alive), and the load it carries
 * (estimated outstanding tokens, in-flight requests). Picks the healthy rank with the
 * fewest outstanding tokens.
 */
import { ApiError } from '../api/ApiError.js';

export interface Backend {
  /** Index in the router's list (the `backend` label of its metrics). */
  readonly index: number;
  url: string;
  healthy: boolean;
  reason: string | null;
  /** performance.now() of the last /health answer, any status; 0 = never. */
  lastAnswerMs: number;
  outstandingTokens: number;
  inFlight: number;
  requestsTotal: number;
  /** A /health poll of this backend is under way. */
  polling: boolean;
}

/** Seconds clients are told to wait (Retry-After) when the router refuses for now. */
export const ROUTER_RETRY_AFTER_S = 1;

const trimUrl = (url: string): string => url.replace(/\/$/, '');

export class Backends {
  readonly list: Backend[];

  constructor(urls: string[]) {
    if (urls.length === 0) throw new Error('FrontRouter needs at least one backend URL');
    this.list = urls.map((url, index) => ({ index, url: trimUrl(url), healthy: true, reason: null, lastAnswerMs: 0, outstandingTokens: 0, inFlight: 0, requestsTotal: 0, polling: false }));
  }

  /** Points a backend at a new URL (its rank restarted on another port); unhealthy until its /health says otherwise. */
  setUrl(index: number, url: string): void {
    const b = this.list[index];
    if (!b) throw new Error(`no backend ${index} (the router has ${this.list.length})`);
    b.url = trimUrl(url);
    this.markDown(b, 'restarted: waiting for its /health');
  }

  markDown(b: Backend, reason: string): void {
    b.healthy = false;
    b.reason = reason;
  }

  /** Polls every backend's /health once (a backend still answering the last poll is skipped). */
  async pollHealth(timeoutMs = 2000): Promise<void> {
    await Promise.all(
      this.list.map(async (b) => {
        if (b.polling) return;
        b.polling = true;
        const url = b.url;
        try {
          const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(timeoutMs) });
          const body = (await res.json().catch(() => ({}))) as { reason?: string };
          if (b.url !== url) return; // re-pointed meanwhile
          b.lastAnswerMs = performance.now();
          b.healthy = res.ok;
          b.reason = res.ok ? null : (body.reason ?? `status ${res.status}`);
        } catch (err) {
          if (b.url === url) this.markDown(b, `unreachable (${(err as Error).message})`);
        } finally {
          b.polling = false;
        }
      }),
    );
  }

  /** The healthy backend with the fewest outstanding tokens, other than `exclude`; undefined when none. */
  pick(exclude?: Backend): Backend | undefined {
    const healthy = this.list.filter((b) => b.healthy && b !== exclude);
    if (healthy.length === 0) return undefined;
    return healthy.reduce((best, b) => (b.outstandingTokens < best.outstandingTokens || (b.outstandingTokens === best.outstandingTokens && b.inFlight < best.inFlight) ? b : best));
  }

  /** pick(), or the 503 that says why nothing can serve. */
  pickOrThrow(): Backend {
    const b = this.pick();
    if (b) return b;
    throw new ApiError(503, 'service_unavailable', `no attention rank is ready (${this.list.map((x) => `${x.url}: ${x.reason}`).join('; ')}); retry later`, 'not_ready');
  }

  get numHealthy(): number {
    return this.list.filter((b) => b.healthy).length;
  }
}
