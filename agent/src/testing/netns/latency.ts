/**
 * The cost of a slow link, measured on the bed: decode streams at one-way delay 0 and at
 * `delayMs` (the relay's delay changes while the ranks stay connected through it),
 * interleaved so that drifting load on a shared machine falls on both alike. Used by the
 * two-host integration test and `afd-bench two-hosts`.
 */
import { median } from '../../bench/serve/stats.js';
import type { DelaySample } from '../../bench/twoHostsReport.js';
import { measureDecodeStep, type DecodeMeasure, type LaunchedRank } from './bedClients.js';
import type { RelayHandle, TwoHostBed } from './TwoHostBed.js';

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
