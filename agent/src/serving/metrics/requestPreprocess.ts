/**
 * `afd:request_preprocess_seconds{stage}`: where a generation request spends its time
 * between its arrival (headers read) and its submission to the scheduler, the part of the
 * client's TTFT that vllm:time_to_first_token_seconds (counted from submission) does not
 * show. Stages, in order: `body` (reading and parsing the JSON body), `prompt` (checks,
 * chat template and tokenisation, worker queue included), `submit` (grammar compile and
 * admission to the scheduler's queue). A request refused or abandoned on the way observes
 * only the stages it finished.
 */
import { Histogram, type Registry } from 'prom-client';
import type { IncomingMessage } from 'node:http';

export const PREPROCESS_STAGES = ['body', 'prompt', 'submit'] as const;
export type PreprocessStage = (typeof PREPROCESS_STAGES)[number];

/** 0.1 ms to 10 s: pre-processing is well under a step when all goes well. */
export const PREPROCESS_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** The last mark of each request in flight (keyed by its IncomingMessage; gone with it). */
const lastMark = new WeakMap<IncomingMessage, { tMs: number; observe: (stage: PreprocessStage, s: number) => void }>();

/** The request arrived (its handler starts): later marks measure from here. */
export function markArrival(req: IncomingMessage, observe: (stage: PreprocessStage, seconds: number) => void): void {
  lastMark.set(req, { tMs: performance.now(), observe });
}

/** `stage` ended now: observes the time since the previous mark. A request never marked at arrival is ignored. */
export function markStage(req: IncomingMessage, stage: PreprocessStage): void {
  const m = lastMark.get(req);
  if (!m) return;
  const now = performance.now();
  m.observe(stage, (now - m.tMs) / 1000);
  m.tMs = now;
  if (stage === 'submit') lastMark.delete(req);
}

/** The histogram on `registry`; returns what markArrival takes. */
export function registerPreprocessMetrics(registry: Registry, modelName: string): (stage: PreprocessStage, seconds: number) => void {
  const h = new Histogram({
    name: 'afd:request_preprocess_seconds',
    help: 'Time of a generation request from its arrival to its submission, by stage: body (read and parse), prompt (chat template and tokenisation, worker queue included), submit (grammar and admission).',
    labelNames: ['model_name', 'stage'],
    buckets: PREPROCESS_BUCKETS,
    registers: [registry],
  });
  for (const stage of PREPROCESS_STAGES) h.zero({ model_name: modelName, stage });
  return (stage, seconds) => h.observe({ model_name: modelName, stage }, seconds);
}
