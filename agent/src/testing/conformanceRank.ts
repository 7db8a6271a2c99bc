/**
 * Test helper of the vLLM conformance files (agent/src/serving/api/vllmConformance.*.int.test.ts):
 * one real colocated rank of a tiny random-weight checkpoint for the whole file (started in
 * a beforeAll, stopped with exit 0 in the afterAll), the official openai client against it,
 * and the rank's /tokenize, /detokenize and /metrics, which stand in for the tokenizer and
 * the Prometheus parser the upstream tests use.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect } from 'vitest';
import { parseExposition, type Family } from '../serving/testing/promExposition.js';
import { RoleProcess } from './RoleProcess.js';
import { useTinyModelSetup } from './tinyModelSetup.js';

/** The served model name (vLLM's tests pass MODEL_NAME). */
export const MODEL = 'm';

export interface ConformanceRank {
  /** Set by the beforeAll. */
  client: OpenAI;
  url: string;
  /** A client with other options (timeout, key), same rank. */
  clientWith(o: ConstructorParameters<typeof OpenAI>[0]): OpenAI;
  /** POST /tokenize: the prompt form, or the chat form when the body has messages. */
  tokenize(body: Record<string, unknown>): Promise<{ count: number; max_model_len: number; tokens: number[]; token_strs: string[] | null }>;
  /** POST /detokenize. */
  detokenize(tokens: number[]): Promise<string>;
  /** GET /metrics, read into families. */
  metrics(): Promise<Map<string, Family>>;
  /** GET /v1/models: the served model's max_model_len. */
  maxModelLen(): Promise<number>;
  /** vocab_size of the checkpoint's config.json (vLLM's get_vocab_size). */
  vocabSize(): number;
}

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Registers the beforeAll that starts the rank and the afterAll that stops it (exit 0). */
export function useConformanceRank(homePrefix: string): ConformanceRank {
  const setup = useTinyModelSetup({ homePrefix, arch: 'qwen3_moe' });
  let rank: RoleProcess | undefined;
  const r: ConformanceRank = {
    client: undefined as unknown as OpenAI,
    url: '',
    clientWith: (o) => new OpenAI({ baseURL: `${r.url}/v1`, apiKey: 'none', maxRetries: 0, ...o }),
    tokenize: (body) => postJson(`${r.url}/tokenize`, { model: MODEL, ...body }),
    detokenize: async (tokens) => (await postJson<{ prompt: string }>(`${r.url}/detokenize`, { model: MODEL, tokens })).prompt,
    metrics: async () => parseExposition(await (await fetch(`${r.url}/metrics`)).text()),
    maxModelLen: async () => (await r.client.models.retrieve(MODEL) as unknown as { max_model_len: number }).max_model_len,
    vocabSize: () => (JSON.parse(readFileSync(join(setup.model, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size,
  };
  beforeAll(async () => {
    rank = await RoleProcess.start({ role: 'colocated', model: setup.model, home: setup.home, servedModelName: MODEL });
    r.url = await rank.ready(120_000);
    r.client = r.clientWith({});
  }, 180_000);
  afterAll(async () => {
    if (rank) expect((await rank.stop()).code).toBe(0);
  });
  return r;
}
