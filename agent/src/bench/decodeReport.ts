/**
 * Pure pieces of `afd-bench decode`: the targets of PERFORMANCE.md and the merge of our
 * native decode benchmark with the HuggingFace peer into one JSON report.
 */
import type { CudaDecodeBenchResult, CudaDecodeBenchRow } from '@afd/native';

/** ms-per-step targets on one H200 (PERFORMANCE.md "Targets"), by batch size. */
export const decodeTargetsMs: Readonly<Record<number, number>> = { 1: 2.0, 64: 20.0 };

/** One batch row of the HF peer (tools/bench/hf_decode.py). */
export interface PeerRow {
  batch: number;
  /** The faster of the eager and CUDA-graph steps (median ms). */
  msPerStep?: number;
  tokensPerSecond?: number;
  /** Median ms of the eager step. */
  msPerStepEager?: number;
  /** Median ms of the step replayed as one CUDA graph; null when the capture failed or was off. */
  msPerStepGraph?: number | null;
  /** Which of the two msPerStep is. */
  mode?: 'eager' | 'cuda-graph';
  error?: string;
}

/** The HF peer's JSON line. */
export interface PeerResult {
  ok: boolean;
  error?: string;
  rows?: PeerRow[];
  [key: string]: unknown;
}

/** One batch size of the merged report. */
export interface DecodeReportRow {
  batch: number;
  /** Our step with the CUDA graph (the serving configuration). */
  graph: CudaDecodeBenchRow;
  /** Our step launched eagerly, kernel by kernel. */
  eager: CudaDecodeBenchRow;
  /** The HF peer at this batch, when it ran. */
  peerMsPerStep: number | null;
  /** The peer's setting behind peerMsPerStep (older peers report none: eager). */
  peerMode: 'eager' | 'cuda-graph' | null;
  /** peerMsPerStep / graph.msPerStep. */
  speedupVsPeer: number | null;
  /** PERFORMANCE.md target, ms per step, when one exists for this batch. */
  targetMs: number | null;
  meetsTarget: boolean | null;
}

export interface DecodeReport {
  bench: 'decode';
  model: string;
  context: number;
  device: string;
  copyBandwidthGBs: number;
  weightBytes: number;
  graphCaptures: number;
  graphHits: number;
  graphMisses: number;
  rows: DecodeReportRow[];
  peer: PeerResult | null;
  commit: string;
  command: string;
}

/** Merges our result and the peer's; rows for batch sizes we ran, in order. */
export function mergeDecodeReport(
  ours: CudaDecodeBenchResult,
  peer: PeerResult | null,
  meta: { model: string; context: number; commit: string; command: string },
): DecodeReport {
  const batches = [...new Set(ours.rows.map((r) => r.batch))];
  const rows = batches.map((batch): DecodeReportRow => {
    const graph = ours.rows.find((r) => r.batch === batch && r.graph);
    const eager = ours.rows.find((r) => r.batch === batch && !r.graph);
    if (!graph || !eager) throw new Error(`decode bench: batch ${batch} lacks a graph or an eager row`);
    const peerRow = peer?.ok ? peer.rows?.find((r) => r.batch === batch) : undefined;
    const peerMs = peerRow?.msPerStep ?? null;
    const targetMs = decodeTargetsMs[batch] ?? null;
    return {
      batch,
      graph,
      eager,
      peerMsPerStep: peerMs,
      peerMode: peerMs === null ? null : (peerRow?.mode ?? 'eager'),
      speedupVsPeer: peerMs !== null ? peerMs / graph.msPerStep : null,
      targetMs,
      meetsTarget: targetMs !== null ? graph.msPerStep <= targetMs : null,
    };
  });
  return {
    bench: 'decode',
    model: meta.model,
    context: meta.context,
    device: ours.deviceName,
    copyBandwidthGBs: ours.copyBandwidthGBs,
    weightBytes: ours.weightBytes,
    graphCaptures: ours.graphCaptures,
    graphHits: ours.graphHits,
    graphMisses: ours.graphMisses,
    rows,
    peer,
    commit: meta.commit,
    command: meta.command,
  };
}

/** The peer prints progress on stderr and one JSON object as its last stdout line. */
export function parsePeerOutput(stdout: string): PeerResult {
  const lines = stdout.trim().split('\n').filter((l) => l.trim().startsWith('{'));
  const last = lines[lines.length - 1];
  if (!last) return { ok: false, error: 'the peer printed no JSON result' };
  try {
    return JSON.parse(last) as PeerResult;
  } catch (err) {
    return { ok: false, error: `unreadable peer output: ${(err as Error).message}` };
  }
}

/** A fixed-width table for people (the JSON is the contract). */
export function formatDecodeTable(report: DecodeReport): string {
  // HF ms ends in "g" when the peer's faster setting was its CUDA graph.
  const head = 'batch  graph ms  eager ms  tok/s      floor ms  of floor  kernels  HF ms    speedup  target';
  const lines = report.rows.map((r) => {
    const f = (v: number | null, d = 2) => (v === null ? '-' : v.toFixed(d));
    return [
      String(r.batch).padEnd(6),
      f(r.graph.msPerStep).padEnd(9),
      f(r.eager.msPerStep).padEnd(9),
      f(r.graph.tokensPerSecond, 0).padEnd(10),
      f(r.graph.floorMsAtReference).padEnd(9),
      `${(r.graph.ratioToFloor * 100).toFixed(0)}%`.padEnd(9),
      String(r.graph.kernelsPerStep).padEnd(8),
      `${f(r.peerMsPerStep)}${r.peerMode === 'cuda-graph' ? 'g' : ''}`.padEnd(8),
      (r.speedupVsPeer === null ? '-' : `${r.speedupVsPeer.toFixed(1)}x`).padEnd(8),
      r.targetMs === null ? '-' : `<= ${r.targetMs} ${r.meetsTarget ? 'met' : 'MISSED'}`,
    ].join(' ');
  });
  return [head, ...lines].join('\n');
}
