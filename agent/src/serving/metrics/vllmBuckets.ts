/** Histogram bucket edges of vLLM v1's Prometheus families (vllm/v1/metrics/loggers.py), in one place. */

/** vllm:time_to_first_token_seconds (seconds). */
export const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
/** vllm:inter_token_latency_seconds and vllm:request_time_per_output_token_seconds (seconds). */
export const TPOT_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
/** Request latencies: e2e, queue, prefill, decode, inference (seconds). */
export const REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
/** vllm:iteration_tokens_total (tokens per engine step). */
export const ITERATION_TOKEN_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
/** vllm:request_params_n. */
export const N_BUCKETS = [1, 2, 5, 10, 20];

/**
 * 1, 2, 5, 10, 20, 50, ... up to `max` inclusive: the token-count buckets, sized by the
 * context window (vLLM's build_1_2_5_buckets(max_model_len)).
 */
export function buckets125(max: number): number[] {
  const out: number[] = [];
  for (let scale = 1; ; scale *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * scale > max) return out;
      out.push(m * scale);
    }
  }
}
