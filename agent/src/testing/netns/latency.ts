/**
 * The cost of a slow link, measured on the bed: decode streams at one-way delay 0 and at
 * `delayMs` (the relay's delay changes while the ranks stay connected through it),
 * interleaved so that drifting load on a shared machine falls on both alike. Used by the
 * two-host integration test and `afd-bench two-hosts`.
 */
import { percentile } from '../../bench/serve/stats.js';
import { measureDecodeStep, type DecodeMeasure, type LaunchedRank } from './bedClients.js';
import type { RelayHandle, TwoHostBed } from './TwoHostBed.js';

export interface DelaySample {
  delayMs: number;
  /** Mean achieved one-way delay of the relay over the runs, ms (timers fire late by up to ~1 ms, more under load). */
  achievedDelayMs: number;
  /** Median over the runs of the serving attention rank's mean step time, ms. */
  stepMs: number;
  /** Every run's mean step time, ms. */
  stepMsRuns: number[];
  /** Median inter-token gap at the client, ms. */
  itlMs: number;
  /** The serving attention rank's per-layer one-way wire time (stage 0) after the last run, microseconds. */
  wireUsPerLayer: number[];
}

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  return percentile([...values].sort((x, y) => x - y), 50);
}

function summarize(delayMs: number, runs: DecodeMeasure[], achievedUs: number[]): DelaySample {
  const last = runs.at(-1)!;
  return {
    delayMs,
    achievedDelayMs: achievedUs.reduce((a, b) => a + b, 0) / achievedUs.length / 1000,
    stepMs: median(runs.map((m) => m.stepMs)),
    stepMsRuns: runs.map((m) => m.stepMs),
    itlMs: median(runs.map((m) => m.itlMs)),
    wireUsPerLayer: (last.stats['f2aWireUs'] as number[][]).map((row) => row[0] ?? 0),
  };
}

/**
 * `repeats` rounds of one stream at delay 0 and one at `delayMs`, after a warm-up stream at
 * each; returns both samples.
 */
export async function measureDelay(
  two: TwoHostBed,
  relay: RelayHandle,
  routerUrl: string,
  attention: readonly LaunchedRank[],
  opts: { delayMs: number; tokens: number; repeats: number },
): Promise<{ baseline: DelaySample; delayed: DelaySample }> {
  const run = async (delayMs: number): Promise<{ m: DecodeMeasure; achievedUs: number }> => {
    await relay.setDelayMs(delayMs);
    await relay.stats(true); // count only this stream's chunks
    const m = await measureDecodeStep(two, routerUrl, attention, opts.tokens);
    return { m, achievedUs: (await relay.stats()).meanDelayUs };
  };
  await run(0);
  await run(opts.delayMs);
  const at0: Awaited<ReturnType<typeof run>>[] = [];
  const atD: Awaited<ReturnType<typeof run>>[] = [];
  for (let i = 0; i < opts.repeats; i++) {
    at0.push(await run(0));
    atD.push(await run(opts.delayMs));
  }
  return {
    baseline: summarize(0, at0.map((r) => r.m), at0.map((r) => r.achievedUs)),
    delayed: summarize(opts.delayMs, atD.map((r) => r.m), atD.map((r) => r.achievedUs)),
  };
}
