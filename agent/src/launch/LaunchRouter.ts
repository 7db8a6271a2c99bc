/**
 * The front router of one agent's share of a launch: started once every local serving
 * rank (attention or colocated) is ready, over their URLs in rank order. Afterwards it
 * follows the ranks: a serving rank that dies is marked down at once (and an FFN rank's
 * death marks its block's attention ranks down), a restarted one is re-pointed to its new
 * URL; the router's health poll brings them back. Its /metrics carries the launch's
 * afd:rank_restarts_total.
 */
import type { CorsConfig } from '@afd/shared';
import type { RankRunner } from './RankRunner.js';
import { advertisedUrl } from '../daemon/advertiseHost.js';
import type { RequestLog } from '../serving/router/RequestLog.js';

/** A front router started over this agent's attention ranks. */
export interface RouterHandle {
  url: string;
  /** Stops admitting, lets in-flight requests finish within graceMs, ends the rest (error event + [DONE]), closes. */
  drain(graceMs: number): Promise<void>;
  close(): Promise<void>;
  /** Backend `index` moved to `url` (its rank restarted). */
  setBackendUrl(index: number, url: string): void;
  /** Backend `index` cannot serve now (until its /health says otherwise). */
  markDown(index: number, reason: string): void;
}

export interface RouterStartOptions {
  /** Bearer key the router requires on /v1 (ranks check it too); undefined = open. */
  apiKey?: string | undefined;
  /** Prometheus text appended to the router's /metrics. */
  metricsExtra: () => string;
  /** CORS of the OpenAI API (the launch spec's api section). */
  cors?: CorsConfig;
  /** Prefer the rank that served a prompt's prefix before (--[no-]router-prefix-affinity; default on). */
  prefixAffinity?: boolean;
  /** Where the router records the requests it serves; omitted = not recorded. */
  requestLog?: RequestLog;
}

/** Starts the topology's OpenAI front router on `port` balancing over `backends` (rank base URLs). */
export type RouterFactory = (backends: string[], host: string, port: number, options: RouterStartOptions) => Promise<RouterHandle>;

export interface LaunchRouterOptions {
  factory: RouterFactory | undefined;
  host: string;
  /** The agent's advertised address: the router's URL names it when the router binds a wildcard. */
  advertiseHost?: string;
  port: number;
  apiKey: string | undefined;
  /** CORS of the OpenAI API (the launch spec's api section). */
  cors?: CorsConfig;
  /** Prefix-affine routing (the launch spec's api.routerPrefixAffinity); default on. */
  prefixAffinity?: boolean;
  /** Restarts per rank, for afd:rank_restarts_total. */
  restarts: () => { role: string; rank: number; total: number }[];
  /** The agent's request log (it outlives the launch). */
  requestLog?: RequestLog;
  onNote?: (message: string) => void;
}

export class LaunchRouter {
  private router: RouterHandle | undefined;
  private starting = false;
  private closed = false;
  /** Why it could not start; undefined when fine. */
  error: string | undefined;

  constructor(
    private readonly opts: LaunchRouterOptions,
    /** The local serving ranks, in backend order. */
    private readonly serving: RankRunner[],
  ) {}

  get url(): string | null {
    return this.router ? advertisedUrl(this.router.url, this.opts.advertiseHost) : null;
  }

  /** A router is configured but not started yet. */
  get pending(): boolean {
    return this.opts.factory !== undefined && this.serving.length > 0 && !this.router;
  }

  /** Starts the router once every serving rank is ready (no-op before, and once started). */
  async maybeStart(): Promise<void> {
    const factory = this.opts.factory;
    if (!factory || this.router || this.starting || this.closed) return;
    if (this.serving.length === 0 || this.serving.some((r) => r.state !== 'ready' || !r.apiUrl)) return;
    this.starting = true;
    try {
      const router = await factory(
        this.serving.map((r) => r.apiUrl!),
        this.opts.host,
        this.opts.port,
        {
          apiKey: this.opts.apiKey,
          metricsExtra: () => this.restartsText(),
          ...(this.opts.cors ? { cors: this.opts.cors } : {}),
          ...(this.opts.prefixAffinity !== undefined ? { prefixAffinity: this.opts.prefixAffinity } : {}),
          ...(this.opts.requestLog ? { requestLog: this.opts.requestLog } : {}),
        },
      );
      if (this.closed) await router.close();
      else this.router = router;
    } catch (e) {
      this.error = `front router could not start on port ${this.opts.port}: ${(e as Error).message}. Choose another apiPort`;
      this.opts.onNote?.(this.error);
    } finally {
      this.starting = false;
    }
  }

  /** A rank died: take what it serves out of the rotation at once. */
  rankFailed(runner: RankRunner, blockOf: (ffnRank: number) => RankRunner[], reason: string): void {
    if (!this.router) return;
    const affected = runner.id.role === 'ffn' ? blockOf(runner.id.rank) : [runner];
    for (const r of affected) {
      const i = this.serving.indexOf(r);
      if (i >= 0) this.router.markDown(i, reason);
    }
  }

  /** A (restarted) serving rank reported its URL: point the router at it. */
  rankListening(runner: RankRunner, url: string): void {
    const i = this.serving.indexOf(runner);
    if (this.router && i >= 0) this.router.setBackendUrl(i, url);
  }

  /** Drains the router (see RouterHandle.drain); resolves at once when none runs. */
  async drain(graceMs: number): Promise<void> {
    this.closed = true;
    const r = this.router;
    this.router = undefined;
    await r?.drain(graceMs).catch((e: unknown) => this.opts.onNote?.(`front router drain failed: ${(e as Error).message}`));
  }

  private restartsText(): string {
    const lines = ['# HELP afd:rank_restarts_total Times the launch restarted a rank after it died (restart policy on-failure).', '# TYPE afd:rank_restarts_total counter'];
    for (const r of this.opts.restarts()) lines.push(`afd:rank_restarts_total{role="${r.role}",rank="${r.rank}"} ${r.total}`);
    return `${lines.join('\n')}\n`;
  }
}
