/**
 * `afd-bench serve`: drives an OpenAI-compatible server with random prompts at a fixed
 * concurrency and/or request rate (Poisson arrivals), then reports request and token
 * throughput and mean / median / percentiles of TTFT, TPOT, ITL and end-to-end latency,
 * with the same definitions as `vllm bench serve`. The multi-turn dataset (shared system
 * prompt, conversations of several turns) is runMultiTurn.ts; both report through
 * serveResultOf.
 */
import { randomRequests, rng } from './randomPrompts.js';
import { summarize, type Summary } from './stats.js';
import { streamRequest, type RequestOutcome } from './streamRequest.js';
import type { MultiTurnStats } from './turnStats.js';

/** What every dataset of `afd-bench serve` takes. */
export interface ServeCommonOptions {
  baseUrl: string;
  /** Model name; undefined = the first of GET /v1/models. */
  model: string | undefined;
  endpoint: string;
  apiKey: string | undefined;
  /** Requests per second (Poisson); Infinity = send all at once. The multi-turn dataset paces conversation starts with it. */
  requestRate: number;
  /** Most requests in flight (multi-turn: most conversations in flight); undefined = unlimited. */
  maxConcurrency: number | undefined;
  ignoreEos: boolean;
  seed: number;
  /** Percentiles to report, e.g. [99]. */
  percentiles: number[];
  temperature: number;
  /** Fields merged into every request body after the bench's own (--extra-body). */
  extraBody?: Record<string, unknown>;
  /** Called after every finished request (progress bar). */
  onProgress?: (done: number, total: number) => void;
}

export interface ServeBenchOptions extends ServeCommonOptions {
  numPrompts: number;
  randomInputLen: number;
  randomOutputLen: number;
  randomRangeRatio: number;
}

export type DatasetName = 'random' | 'multi-turn';

export interface ServeBenchResult {
  datasetName: DatasetName;
  baseUrl: string;
  model: string;
  /** Requests planned (multi-turn: conversations x turns). */
  numPrompts: number;
  completed: number;
  failed: number;
  /** First few error messages. */
  errors: string[];
  maxConcurrency: number | null;
  /** The --extra-body fields every request carried. */
  extraBody: Record<string, unknown>;
  requestRate: number | 'inf';
  durationS: number;
  totalInputTokens: number;
  totalOutputTokens: number;
  /** Prompt tokens the server served from its prefix cache (usage.prompt_tokens_details.cached_tokens, summed); null when it reports none. */
  totalCachedTokens: number | null;
  /** totalCachedTokens / totalInputTokens; null when the server reports no cached tokens. */
  cacheHitRatio: number | null;
  requestThroughput: number;
  outputThroughput: number;
  totalTokenThroughput: number;
  ttftMs: Summary;
  tpotMs: Summary;
  itlMs: Summary;
  e2elMs: Summary;
  /** The multi-turn dataset's shape and its per-turn figures (absent for random). */
  multiTurn?: MultiTurnStats;
}

export async function resolveModel(o: Pick<ServeCommonOptions, 'baseUrl' | 'model' | 'apiKey'>): Promise<string> {
  if (o.model) return o.model;
  const res = await fetch(`${o.baseUrl}/v1/models`, { headers: o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {} });
  if (!res.ok) throw new Error(`GET ${o.baseUrl}/v1/models failed with HTTP ${res.status}; pass --model`);
  const body = (await res.json()) as { data?: { id: string }[] };
  const id = body.data?.[0]?.id;
  if (!id) throw new Error(`${o.baseUrl}/v1/models lists no model; pass --model`);
  return id;
}

/** The server's root URL: no trailing slash, no /v1. */
export function rootUrl(baseUrl: string): string {
  return baseUrl.replace(/\/$/, '').replace(/\/v1$/, '');
}

/** A counting semaphore for --max-concurrency. */
export function limiter(max: number | undefined): () => Promise<() => void> {
  let active = 0;
  const queue: (() => void)[] = [];
  return async () => {
    if (max !== undefined && active >= max) await new Promise<void>((r) => queue.push(r));
    active++;
    return () => {
      active--;
      queue.shift()?.();
    };
  };
}

/** Waits an exponential gap of mean 1/rate seconds (Poisson arrivals); nothing when the rate is inf. */
export async function arrivalGap(rate: number, nextUniform: () => number): Promise<void> {
  if (!Number.isFinite(rate)) return;
  const gapS = -Math.log(1 - nextUniform()) / rate;
  await new Promise((res) => setTimeout(res, gapS * 1000));
}

/** Sum of the reported cached tokens of `ok`; null when none of them reported any. */
export function cachedTokensOf(ok: readonly RequestOutcome[]): number | null {
  return ok.some((x) => x.cachedTokens !== null) ? ok.reduce((a, x) => a + (x.cachedTokens ?? 0), 0) : null;
}

/** The result every dataset reports, from its request outcomes. */
export function serveResultOf(
  o: ServeCommonOptions,
  run: { datasetName: DatasetName; baseUrl: string; model: string; numPrompts: number; durationS: number; outcomes: readonly RequestOutcome[] },
): ServeBenchResult {
  const { outcomes, durationS } = run;
  const ok = outcomes.filter((x) => x.ok);
  const totalInputTokens = ok.reduce((a, x) => a + x.promptTokens, 0);
  const totalOutputTokens = ok.reduce((a, x) => a + x.outputTokens, 0);
  const totalCachedTokens = cachedTokensOf(ok);
  const tpot = ok.filter((x) => x.outputTokens > 1).map((x) => (x.e2eMs - x.ttftMs) / (x.outputTokens - 1));
  const p = o.percentiles;
  return {
    datasetName: run.datasetName,
    baseUrl: run.baseUrl,
    model: run.model,
    numPrompts: run.numPrompts,
    completed: ok.length,
    failed: outcomes.length - ok.length,
    errors: outcomes.filter((x) => !x.ok).slice(0, 5).map((x) => x.error ?? 'unknown error'),
    maxConcurrency: o.maxConcurrency ?? null,
    extraBody: o.extraBody ?? {},
    requestRate: Number.isFinite(o.requestRate) ? o.requestRate : 'inf',
    durationS,
    totalInputTokens,
    totalOutputTokens,
    totalCachedTokens,
    cacheHitRatio: totalCachedTokens === null || totalInputTokens === 0 ? null : totalCachedTokens / totalInputTokens,
    requestThroughput: ok.length / durationS,
    outputThroughput: totalOutputTokens / durationS,
    totalTokenThroughput: (totalInputTokens + totalOutputTokens) / durationS,
    ttftMs: summarize(ok.map((x) => x.ttftMs), p),
    tpotMs: summarize(tpot, p),
    itlMs: summarize(ok.flatMap((x) => x.itlMs), p),
    e2elMs: summarize(ok.map((x) => x.e2eMs), p),
  };
}

export async function runServeBench(o: ServeBenchOptions): Promise<ServeBenchResult> {
  const baseUrl = rootUrl(o.baseUrl);
  const model = await resolveModel({ ...o, baseUrl });
  const requests = randomRequests(o.numPrompts, o.randomInputLen, o.randomOutputLen, o.seed, o.randomRangeRatio);
  const acquire = limiter(o.maxConcurrency);
  const chat = o.endpoint.includes('chat');
  const nextUniform = rng(o.seed ^ 0x9e3779b9);
  const outcomes: RequestOutcome[] = [];
  let done = 0;
  const t0 = performance.now();
  const tasks: Promise<void>[] = [];
  for (const r of requests) {
    const release = await acquire();
    tasks.push(
      streamRequest({
        baseUrl,
        endpoint: o.endpoint,
        apiKey: o.apiKey,
        fallbackPromptTokens: r.inputLen,
        body: {
          model,
          ...(chat ? { messages: [{ role: 'user', content: r.prompt }] } : { prompt: r.prompt }),
          max_tokens: r.outputLen,
          temperature: o.temperature,
          ignore_eos: o.ignoreEos,
          ...o.extraBody,
        },
      }).then((outcome) => {
        outcomes.push(outcome);
        release();
        o.onProgress?.(++done, requests.length);
      }),
    );
    await arrivalGap(o.requestRate, nextUniform);
  }
  await Promise.all(tasks);
  const durationS = (performance.now() - t0) / 1000;
  return serveResultOf(o, { datasetName: 'random', baseUrl, model, numPrompts: o.numPrompts, durationS, outcomes });
}
