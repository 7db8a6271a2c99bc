/**
 * The vllm: Prometheus families a serving rank updates as requests run, under vLLM v1's
 * names, help texts, labels (model_name) and bucket edges (vllm/v1/metrics/loggers.py).
 * Gauges read at scrape time and vllm:cache_config_info are registered by ServingMetrics.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { buckets125, ITERATION_TOKEN_BUCKETS, N_BUCKETS, REQUEST_LATENCY_BUCKETS, TPOT_BUCKETS, TTFT_BUCKETS } from './vllmBuckets.js';

type L = 'model_name';

export interface VllmFamilies {
  promptTokens: Counter<L>;
  generationTokens: Counter<L>;
  requestSuccess: Counter<L | 'finished_reason'>;
  prefixCacheQueries: Counter<L>;
  prefixCacheHits: Counter<L>;
  ttft: Histogram<L>;
  itl: Histogram<L>;
  tpotPerRequest: Histogram<L>;
  e2e: Histogram<L>;
  queueTime: Histogram<L>;
  prefillTime: Histogram<L>;
  decodeTime: Histogram<L>;
  inferenceTime: Histogram<L>;
  promptLen: Histogram<L>;
  generationLen: Histogram<L>;
  maxGenerationLen: Histogram<L>;
  iterationTokens: Histogram<L>;
  paramsN: Histogram<L>;
  paramsMaxTokens: Histogram<L>;
}

/** Registers the families; token-count buckets run 1, 2, 5, ... up to `maxModelLen`. */
export function createVllmFamilies(registry: Registry, maxModelLen: number): VllmFamilies {
  const labelNames = ['model_name'] as const;
  const registers = [registry];
  const counter = (name: string, help: string): Counter<L> => new Counter({ name, help, labelNames, registers });
  const histogram = (name: string, help: string, buckets: number[]): Histogram<L> => new Histogram({ name, help, labelNames, buckets, registers });
  const tokens = buckets125(maxModelLen);
  return {
    promptTokens: counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.'),
    generationTokens: counter('vllm:generation_tokens_total', 'Number of generation tokens processed.'),
    requestSuccess: new Counter({ name: 'vllm:request_success_total', help: 'Count of successfully processed requests.', labelNames: ['model_name', 'finished_reason'], registers }),
    prefixCacheQueries: counter('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.'),
    prefixCacheHits: counter('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.'),
    ttft: histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_BUCKETS),
    itl: histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', TPOT_BUCKETS),
    tpotPerRequest: histogram('vllm:request_time_per_output_token_seconds', 'Histogram of time_per_output_token_seconds per request.', TPOT_BUCKETS),
    e2e: histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', REQUEST_LATENCY_BUCKETS),
    queueTime: histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', REQUEST_LATENCY_BUCKETS),
    prefillTime: histogram('vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', REQUEST_LATENCY_BUCKETS),
    decodeTime: histogram('vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', REQUEST_LATENCY_BUCKETS),
    inferenceTime: histogram('vllm:request_inference_time_seconds', 'Histogram of time spent in RUNNING phase for request.', REQUEST_LATENCY_BUCKETS),
    promptLen: histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', tokens),
    generationLen: histogram('vllm:request_generation_tokens', 'Number of generation tokens processed.', tokens),
    maxGenerationLen: histogram('vllm:request_max_num_generation_tokens', 'Histogram of maximum number of requested generation tokens.', tokens),
    iterationTokens: histogram('vllm:iteration_tokens_total', 'Histogram of number of tokens per engine_step.', ITERATION_TOKEN_BUCKETS),
    paramsN: histogram('vllm:request_params_n', 'Histogram of the n request parameter.', N_BUCKETS),
    paramsMaxTokens: histogram('vllm:request_params_max_tokens', 'Histogram of the max_tokens request parameter.', tokens),
  };
}
