/**
 * vLLM's metric families on a real rank server (fake engine) after a few requests, read from
 * /metrics as Prometheus reads it: every family with vLLM's type, labels and bucket edges
 * (written out here from vllm/v1/metrics/loggers.py, not taken from our constants), the
 * counts each request adds, and phase times that add up: queue + prefill + decode = e2e.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExposition, histogramOf, type Family } from '../testing/promExposition.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { buckets125 } from './vllmBuckets.js';

const LATENCY = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
const TPOT = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITERATION = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
/** build_1_2_5_buckets(max_model_len) with max_model_len 128. */
const TOKENS = [1, 2, 5, 10, 20, 50, 100];

/** Histograms of one observation per request (5 requests below). */
const PER_REQUEST: [string, number[]][] = [
  ['vllm:e2e_request_latency_seconds', LATENCY],
  ['vllm:request_queue_time_seconds', LATENCY],
  ['vllm:request_prefill_time_seconds', LATENCY],
  ['vllm:request_decode_time_seconds', LATENCY],
  ['vllm:request_inference_time_seconds', LATENCY],
  ['vllm:request_time_per_output_token_seconds', TPOT],
  ['vllm:time_to_first_token_seconds', TTFT],
  ['vllm:request_prompt_tokens', TOKENS],
  ['vllm:request_generation_tokens', TOKENS],
  ['vllm:request_max_num_generation_tokens', TOKENS],
  ['vllm:request_params_max_tokens', TOKENS],
  ['vllm:request_params_n', [1, 2, 5, 10, 20]],
];
const REQUESTS = 5;

let srv: TestServer;
let families: Map<string, Family>;
const model = { model_name: 'tiny' };

beforeAll(async () => {
  // Two sequences at a time: the other requests wait in the queue.
  srv = await startTestServer({ engine: { maxModelLen: 128, stepDelayMs: 3 }, serving: { scheduler: { maxNumSeqs: 2, maxNumBatchedTokens: 256, longPrefillTokenThreshold: 0, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } } } });
  const post = (path: string, body: object): Promise<string> =>
    fetch(srv.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.text());
  await Promise.all([
    ...[4, 5, 6, 7].map((max) => post('/v1/completions', { model: 'tiny', prompt: 'Once upon a time', max_tokens: max, ignore_eos: true })),
    post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, ignore_eos: true, stream: true }),
  ]);
  families = parseExposition(await (await fetch(`${srv.url}/metrics`)).text());
});
afterAll(() => srv.close());

function family(name: string): Family {
  const f = families.get(name);
  if (!f) throw new Error(`${name} is not exported`);
  return f;
}
const counter = (name: string): number => family(name).samples.find((s) => s.labels['model_name'] === 'tiny')!.value;

describe('vLLM metric families', () => {
  it.each(PER_REQUEST)('%s: a histogram labelled model_name with vLLM\'s bucket edges, one observation per request', (name, edges) => {
    const f = family(name);
    expect(f.type).toBe('histogram');
    expect(new Set(f.samples.map((s) => Object.keys(s.labels).filter((k) => k !== 'le').join(',')))).toEqual(new Set(['model_name']));
    const h = histogramOf(f, model);
    expect(h.edges).toEqual(edges);
    expect(h.count).toBe(REQUESTS);
  });

  it("vllm:iteration_tokens_total: tokens per engine step, vLLM's count: summing to every prompt and every generated token", () => {
    const f = family('vllm:iteration_tokens_total');
    expect(f.type).toBe('histogram');
    const h = histogramOf(f, model);
    expect(h.edges).toEqual(ITERATION);
    expect(h.count).toBeGreaterThan(1);
    // Each prompt once (with its first token), each generated token once (vLLM's test_metrics_counts: P + max_tokens a request).
    expect(h.sum).toBe(counter('vllm:prompt_tokens_total') + counter('vllm:generation_tokens_total'));
  });

  it('vllm:prefix_cache_queries / _hits: counters of prompt tokens looked up, none found (no KV blocks are shared yet)', () => {
    expect(family('vllm:prefix_cache_queries_total').type).toBe('counter');
    expect(family('vllm:prefix_cache_hits_total').type).toBe('counter');
    expect(counter('vllm:prefix_cache_queries_total')).toBe(counter('vllm:prompt_tokens_total'));
    expect(counter('vllm:prefix_cache_hits_total')).toBe(0);
  });

  it('vllm:cache_config_info: a gauge at 1 whose labels are the KV cache config, spelled as vLLM spells them', () => {
    const f = family('vllm:cache_config_info');
    expect(f.type).toBe('gauge');
    expect(f.samples).toEqual([
      {
        name: 'vllm:cache_config_info',
        labels: { block_size: '16', cache_dtype: 'auto', enable_prefix_caching: 'False', gpu_memory_utilization: 'None', kv_cache_memory_bytes: 'None', num_cpu_blocks: 'None', num_gpu_blocks: '256' },
        value: 1,
      },
    ]);
  });

  it('request parameters: n is 1 for every request, max_tokens as asked', () => {
    const n = histogramOf(family('vllm:request_params_n'), model);
    expect(n.sum).toBe(REQUESTS);
    expect(histogramOf(family('vllm:request_params_max_tokens'), model).sum).toBe(4 + 5 + 6 + 7 + 3);
    expect(histogramOf(family('vllm:request_max_num_generation_tokens'), model).sum).toBe(4 + 5 + 6 + 7 + 3);
  });

  it('phase times add up: queue + prefill + decode = e2e, queue + prefill = TTFT, prefill + decode = inference; requests did queue', () => {
    const sum = (name: string): number => histogramOf(family(name), model).sum;
    const [queue, prefill, decode] = ['vllm:request_queue_time_seconds', 'vllm:request_prefill_time_seconds', 'vllm:request_decode_time_seconds'].map(sum) as [number, number, number];
    // e2e ends when the request is closed, just after its last token is handled: close, not exact (a loaded box adds ms).
    expect(queue + prefill + decode).toBeCloseTo(sum('vllm:e2e_request_latency_seconds'), 1);
    expect(queue + prefill + decode).toBeLessThanOrEqual(sum('vllm:e2e_request_latency_seconds') + 1e-9);
    expect(queue + prefill).toBeCloseTo(sum('vllm:time_to_first_token_seconds'), 2);
    expect(prefill + decode).toBeCloseTo(sum('vllm:request_inference_time_seconds'), 2);
    expect(queue).toBeGreaterThan(0.003); // with two slots, three requests waited at least a step
  });

  it('the buckets of token counts follow the context window (vLLM\'s build_1_2_5_buckets)', () => {
    expect(buckets125(100)).toEqual([1, 2, 5, 10, 20, 50, 100]);
    expect(buckets125(4096)).toEqual([1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]);
  });
});
