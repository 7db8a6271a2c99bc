/**
 * The JSON report of `afd-bench afd-gpu` (produced natively by afdGpuBench on the
 * attention side) and the targets of shared/design/PERFORMANCE.md evaluated against it.
 */

/** One ping-pong measurement. */
export interface PingRow {
  transport: string;
  bytes: number;
  /** Host-launched send + recv round trip, median, microseconds. */
  hostRoundTripUs: number;
  hostRoundTripP90Us: number;
  /** Round trip inside a captured graph (graphRounds per graph), median per round, microseconds. */
  graphRoundTripUs: number;
  graphRounds: number;
}

/** One colocated baseline row. */
export interface ColocatedRow {
  batch: number;
  graph: boolean;
  msPerStep: number;
  msPerStepP90: number;
  tokensPerSecond: number;
}

/** One AFD decode row (or a counters row, which has graphHits). */
export interface AfdRow {
  transport: string;
  /** Where the router runs: 'ffn' or 'attention' (router logits cross the wire). */
  gate?: string;
  batch?: number;
  graph?: boolean;
  dbo?: boolean;
  msPerStep?: number;
  tokensPerSecond?: number;
  /** Output tokens/s divided by the two GPUs of 1A1F. */
  tokensPerSecondPerGpu?: number;
  colocatedMsPerStep?: number;
  ratioToColocated?: number;
  steps?: number;
  /** Steps whose greedy tokens differ from the colocated run (0 = equal). */
  mismatchedSteps?: number;
  layerRoundTripUsMedian?: number;
  graphHits?: number;
  graphMisses?: number;
  graphCaptures?: number;
}

export interface FaultResult {
  transport: string;
  stepDeadlineMs: number;
  failedAfterMs: number;
  error: string;
  failed: boolean;
  /** The aborted step's kernels returned (NCCL abort) within 3 s. */
  streamDrainedAfterAbort?: boolean;
  aliveAfterFault: boolean;
  aliveError: string;
}

export interface AfdGpuReport {
  device: string;
  ncclVersion?: number;
  pingPong: PingRow[];
  colocated: ColocatedRow[];
  afd: AfdRow[];
  fault?: FaultResult;
}

/** A target, its measured value and whether it is met. */
export interface TargetCheck {
  name: string;
  target: string;
  measured: number | null;
  met: boolean | null;
}

const tpotLimitMs = 50;

/** Best output tokens/s per GPU among rows whose step time is within the TPOT limit. */
function bestPerGpu(rows: { msPerStep: number; perGpu: number }[]): number | null {
  const ok = rows.filter((r) => r.msPerStep <= tpotLimitMs);
  return ok.length ? Math.max(...ok.map((r) => r.perGpu)) : null;
}

export function evaluateAfdTargets(r: AfdGpuReport): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const transport of ['nccl', 'peer']) {
    const ping = r.pingPong.find((p) => p.transport === transport && p.bytes === 4096);
    if (!ping) continue;
    const limit = transport === 'nccl' ? 15 : 5;
    checks.push({ name: `per-layer round trip in a graph, ${transport}, 4 KB`, target: `<= ${limit} us`, measured: ping.graphRoundTripUs, met: ping.graphRoundTripUs <= limit });
    const b1 = r.afd.find((a) => a.transport === transport && a.gate !== 'attention' && a.batch === 1 && a.graph && !a.dbo);
    if (b1?.ratioToColocated !== undefined) {
      checks.push({ name: `1A1F / colocated step at batch 1, ${transport}, graphs`, target: '<= 1.25', measured: b1.ratioToColocated, met: b1.ratioToColocated <= 1.25 });
    }
    const afdBest = bestPerGpu(
      r.afd
        .filter((a) => a.transport === transport && a.graph && a.msPerStep !== undefined && a.tokensPerSecondPerGpu !== undefined)
        .map((a) => ({ msPerStep: a.msPerStep ?? Infinity, perGpu: a.tokensPerSecondPerGpu ?? 0 })),
    );
    const colocatedBest = bestPerGpu(r.colocated.map((c) => ({ msPerStep: c.msPerStep, perGpu: c.tokensPerSecond })));
    if (afdBest !== null && colocatedBest !== null) {
      checks.push({
        name: `tokens/s per GPU at TPOT <= ${tpotLimitMs} ms, 1A1F (${transport}) / two colocated replicas`,
        target: '> 1',
        measured: afdBest / colocatedBest,
        met: afdBest > colocatedBest,
      });
    }
    const rows = r.afd.filter((a) => a.transport === transport && a.mismatchedSteps !== undefined);
    if (rows.length) {
      const bad = rows.reduce((n, a) => n + (a.mismatchedSteps ?? 0), 0);
      checks.push({ name: `greedy tokens equal colocated, ${transport} (all batches, gate either side, graph on/off, DBO on/off)`, target: '0 mismatched steps', measured: bad, met: bad === 0 });
    }
  }
  if (r.fault) {
    checks.push({
      name: `FFN killed: step fails within the deadline (${r.fault.transport}) and the process stays usable`,
      target: `<= ${r.fault.stepDeadlineMs} ms`,
      measured: r.fault.failedAfterMs,
      met: r.fault.failed && r.fault.failedAfterMs <= r.fault.stepDeadlineMs + 1000 && r.fault.aliveAfterFault,
    });
  }
  return checks;
}
