/**
 * Prometheus metrics of an attention/colocated rank under vLLM's names, so dashboards built
 * for vLLM work unchanged. One registry per server (no global registry).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ServingStats } from '@afd/shared';
import type { ServingObserver } from '../ServingEngine.js';
import type { FinishReason } from '../scheduler/Sequence.js';

/** vLLM's latency buckets (seconds). */
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
/** Token-count buckets (vLLM's 1-2-5 series up to 64k). */
const TOKEN_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000];
const E2E_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];

/** Gauges read at scrape time. */
export interface ServingGaugeSource {
  numRunning(): number;
  numWaiting(): number;
  /** 0..1 */
  kvUsage(): number;
  /** Cumulative preemptions. */
  numPreemptions(): number;
}

export class ServingMetrics implements ServingObserver {
  private readonly labels: { model_name: string };
  private readonly promptTokens: Counter<'model_name'>;
  private readonly generationTokens: Counter<'model_name'>;
  private readonly requestSuccess: Counter<'model_name' | 'finished_reason'>;
  private readonly ttft: Histogram<'model_name'>;
  private readonly itl: Histogram<'model_name'>;
  private readonly e2e: Histogram<'model_name'>;
  private readonly promptLen: Histogram<'model_name'>;
  private readonly generationLen: Histogram<'model_name'>;
  private promptTokensTotal = 0;
  private generationTokensTotal = 0;
  private finishedTotal = 0;
  /** Generated-token counts in 50 ms buckets over the last second, for outputTokensPerSecond. */
  private recent: { tMs: number; n: number }[] = [];

  constructor(
    registry: Registry,
    modelName: string,
    private readonly source: ServingGaugeSource,
  ) {
    const labels = (this.labels = { model_name: modelName });
    const labelNames = ['model_name'] as const;
    const registers = [registry];
    new Gauge({ name: 'vllm:num_requests_running', help: 'Requests in model execution batches.', labelNames, registers, collect() { this.set(labels, source.numRunning()); } });
    new Gauge({ name: 'vllm:num_requests_waiting', help: 'Requests waiting to be processed.', labelNames, registers, collect() { this.set(labels, source.numWaiting()); } });
    new Gauge({ name: 'vllm:kv_cache_usage_perc', help: 'KV-cache usage. 1 means 100 percent usage.', labelNames, registers, collect() { this.set(labels, source.kvUsage()); } });
    let seenPreemptions = 0;
    new Counter({
      name: 'vllm:num_preemptions_total',
      help: 'Cumulative number of preemptions from the engine.',
      labelNames,
      registers,
      collect() {
        const n = source.numPreemptions();
        this.inc(labels, Math.max(0, n - seenPreemptions));
        seenPreemptions = n;
      },
    });
    this.promptTokens = new Counter({ name: 'vllm:prompt_tokens_total', help: 'Number of prefill tokens processed.', labelNames, registers });
    this.generationTokens = new Counter({ name: 'vllm:generation_tokens_total', help: 'Number of generation tokens processed.', labelNames, registers });
    this.requestSuccess = new Counter({ name: 'vllm:request_success_total', help: 'Count of finished requests by reason.', labelNames: ['model_name', 'finished_reason'], registers });
    this.ttft = new Histogram({ name: 'vllm:time_to_first_token_seconds', help: 'Histogram of time to first token in seconds.', labelNames, buckets: TTFT_BUCKETS, registers });
    this.itl = new Histogram({ name: 'vllm:inter_token_latency_seconds', help: 'Histogram of inter-token latency in seconds.', labelNames, buckets: ITL_BUCKETS, registers });
    this.e2e = new Histogram({ name: 'vllm:e2e_request_latency_seconds', help: 'Histogram of end to end request latency in seconds.', labelNames, buckets: E2E_BUCKETS, registers });
    this.promptLen = new Histogram({ name: 'vllm:request_prompt_tokens', help: 'Number of prefill tokens processed.', labelNames, buckets: TOKEN_BUCKETS, registers });
    this.generationLen = new Histogram({ name: 'vllm:request_generation_tokens', help: 'Number of generation tokens processed.', labelNames, buckets: TOKEN_BUCKETS, registers });
  }

  onRequestStart(promptTokens: number): void {
    this.promptTokens.inc(this.labels, promptTokens);
    this.promptLen.observe(this.labels, promptTokens);
    this.promptTokensTotal += promptTokens;
  }

  onFirstToken(ttftS: number): void {
    this.ttft.observe(this.labels, ttftS);
    this.countToken();
  }

  onNextToken(itlS: number): void {
    this.itl.observe(this.labels, itlS);
    this.countToken();
  }

  onRequestEnd(e2eS: number, completionTokens: number, reason: FinishReason | 'error'): void {
    this.e2e.observe(this.labels, e2eS);
    this.generationLen.observe(this.labels, completionTokens);
    this.requestSuccess.inc({ ...this.labels, finished_reason: reason }, 1);
    this.finishedTotal += 1;
  }

  private countToken(): void {
    this.generationTokens.inc(this.labels, 1);
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
