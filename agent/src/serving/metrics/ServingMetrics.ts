/**
 * Prometheus metrics of an attention/colocated rank under vLLM's names, so dashboards built
 * for vLLM work unchanged (families: vllmFamilies.ts; the table: docs/api.md "Metrics").
 * One registry per server (no global registry).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ServingStats } from '@afd/shared';
import type { RequestParamsInfo, RequestPhases, ServingObserver } from '../ServingEngine.js';
import type { FinishReason } from '../scheduler/Sequence.js';
import { registerCacheConfigInfo, type CacheConfigInfo } from './cacheConfigInfo.js';
import { createVllmFamilies, type VllmFamilies } from './vllmFamilies.js';

/** Gauges read at scrape time. */
export interface ServingGaugeSource {
  numRunning(): number;
  numWaiting(): number;
  /** 0..1 */
  kvUsage(): number;
  /** Cumulative preemptions. */
  numPreemptions(): number;
}

export interface ServingMetricsOptions {
  /** Longest prompt + output of a request: the top of the token-count buckets. */
  maxModelLen: number;
  /** The KV cache as vllm:cache_config_info labels. */
  cacheConfig: CacheConfigInfo;
}

export class ServingMetrics implements ServingObserver {
  private readonly labels: { model_name: string };
  private readonly f: VllmFamilies;
  private promptTokensTotal = 0;
  private generationTokensTotal = 0;
  private finishedTotal = 0;
  /** Generated-token counts in 50 ms buckets over the last second, for outputTokensPerSecond. */
  private recent: { tMs: number; n: number }[] = [];

  constructor(
    registry: Registry,
    modelName: string,
    private readonly source: ServingGaugeSource,
    options: ServingMetricsOptions,
  ) {
    const labels = (this.labels = { model_name: modelName });
    const labelNames = ['model_name'] as const;
    const registers = [registry];
    new Gauge({ name: 'vllm:num_requests_running', help: 'Number of requests in model execution batches.', labelNames, registers, collect() { this.set(labels, source.numRunning()); } });
    new Gauge({ name: 'vllm:num_requests_waiting', help: 'Number of requests waiting to be processed.', labelNames, registers, collect() { this.set(labels, source.numWaiting()); } });
    new Gauge({ name: 'vllm:kv_cache_usage_perc', help: 'KV-cache usage. 1 means 100 percent usage.', labelNames, registers, collect() { this.set(labels, source.kvUsage()); } });
    let seenPreemptions = 0;
    new Counter({
      name: 'vllm:num_preemptions_total',
      help: 'Cumulative number of preemption from the engine.',
      labelNames,
      registers,
      collect() {
        const n = source.numPreemptions();
        this.inc(labels, Math.max(0, n - seenPreemptions));
        seenPreemptions = n;
      },
    });
    this.f = createVllmFamilies(registry, options.maxModelLen);
    registerCacheConfigInfo(registry, options.cacheConfig);
  }

  onRequestStart(promptTokens: number, params: RequestParamsInfo): void {
    this.f.promptTokens.inc(this.labels, promptTokens);
    this.f.promptLen.observe(this.labels, promptTokens);
    this.f.paramsN.observe(this.labels, params.n);
    this.f.paramsMaxTokens.observe(this.labels, params.maxTokens);
    this.promptTokensTotal += promptTokens;
  }

  onRequestScheduled(queueS: number): void {
    this.f.queueTime.observe(this.labels, queueS);
  }

  onFirstToken(ttftS: number, prefillS: number): void {
    this.f.ttft.observe(this.labels, ttftS);
    this.f.prefillTime.observe(this.labels, prefillS);
    this.countToken();
  }

  onNextToken(itlS: number): void {
    this.f.itl.observe(this.labels, itlS);
    this.countToken();
  }

  onIteration(numTokens: number): void {
    this.f.iterationTokens.observe(this.labels, numTokens);
  }

  onPrefixCacheLookup(queriedTokens: number, hitTokens: number): void {
    this.f.prefixCacheQueries.inc(this.labels, queriedTokens);
    this.f.prefixCacheHits.inc(this.labels, hitTokens);
  }

  onRequestEnd(e2eS: number, completionTokens: number, reason: FinishReason | 'error', phases: RequestPhases): void {
    const l = this.labels;
    this.f.e2e.observe(l, e2eS);
    this.f.generationLen.observe(l, completionTokens);
    // One sequence per request for now: the largest generation of its group is its own.
    this.f.maxGenerationLen.observe(l, completionTokens);
    if (phases.decodeS !== null && phases.inferenceS !== null) {
      this.f.decodeTime.observe(l, phases.decodeS);
      this.f.inferenceTime.observe(l, phases.inferenceS);
      // vLLM: the decode time over the tokens after the first, 0 for a one-token request.
      this.f.tpotPerRequest.observe(l, completionTokens > 1 ? phases.decodeS / (completionTokens - 1) : 0);
    }
    this.f.requestSuccess.inc({ ...l, finished_reason: reason }, 1);
    this.finishedTotal += 1;
  }

  private countToken(): void {
    this.f.generationTokens.inc(this.labels, 1);
    this.generationTokensTotal += 1;
    const t = Date.now();
    const last = this.recent[this.recent.length - 1];
    if (last && t - last.tMs < 50) last.n += 1;
    else this.recent.push({ tMs: t, n: 1 });
    while (this.recent.length > 0 && t - this.recent[0]!.tMs > 1000) this.recent.shift();
  }

  /** The serving numbers the agent streams to the console. */
  snapshot(): ServingStats {
    const t = Date.now();
    const outputTokensPerSecond = this.recent.filter((r) => t - r.tMs <= 1000).reduce((a, r) => a + r.n, 0);
    return {
      runningRequests: this.source.numRunning(),
      waitingRequests: this.source.numWaiting(),
      promptTokensTotal: this.promptTokensTotal,
      generationTokensTotal: this.generationTokensTotal,
      requestsFinishedTotal: this.finishedTotal,
      outputTokensPerSecond,
      kvUsage: Math.min(1, Math.max(0, this.source.kvUsage())),
    };
  }
}
