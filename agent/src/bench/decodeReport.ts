/**
 * Pure pieces of `afd-bench decode`: the targets, the floor of each batch, the merge of
 * the product engine's measurements with the HuggingFace peer into one JSON report, and
 * the table for people.
 */

/** ms-per-step targets of Engine::step on one H200 (the one-engine issue), by batch size. */
export const decodeTargetsMs: Readonly<Record<number, number>> = { 1: 3.0, 64: 18.0 };
/** DeepSeek's (issue 16: the step at batch 64 within 10 ms; batch 1 is judged served, by TPOT). */
export const deepseekDecodeTargetsMs: Readonly<Record<number, number>> = { 64: 10.0 };

/** The targets of a report's model (`arch/preset`). */
export function decodeTargetsFor(model: string): Readonly<Record<number, number>> {
  return model.startsWith('deepseek') ? deepseekDecodeTargetsMs : decodeTargetsMs;
}

/** One (batch, graphs on/off) measurement of Engine::step. */
export interface EngineDecodeRow {
  batch: number;
  /** CUDA graphs on (decode-only policy) or off. */
  graph: boolean;
  /** Median ms per step, host wall clock around Engine.step (plan upload to tokens back). */
  msPerStep: number;
  msPerStepP10: number;
  msPerStepP90: number;
  /** Median of the engine's own step time (native, inside the step lock). */
  engineMsPerStep: number;
  tokensPerSecond: number;
  /** Nodes of the captured step graph (kernels, memsets, copies); null without graphs. */
  kernelsPerStep: number | null;
  /** Graph replays / eager steps of the timed steps (graphs on). */
  graphHits: number;
  graphMisses: number;
  /** The same steps with the run's extras (--top-logprobs / --penalties) on every sequence; absent without them. */
  extras?: ExtrasTiming;
}

/** One batch and mode decoded again with the extras on: its median ms and the ratio to the plain step. */
export interface ExtrasTiming {
  msPerStep: number;
  engineMsPerStep: number;
  /** msPerStep / the plain step's msPerStep. */
  ratio: number;
}

/** What the floor of one batch is made of (stepFloor.ts). */
export interface DecodeFloor {
  batch: number;
  weightBytes: number;
  kvBytes: number;
  activeExpertsPerLayer: number;
}

/** One batch row of the HF peer (tools/bench/hf_decode.py). */
export interface PeerRow {
  batch: number;
  /** The faster of the eager and CUDA-graph steps (median ms). */
  msPerStep?: number;
  tokensPerSecond?: number;
  msPerStepEager?: number;
  msPerStepGraph?: number | null;
  mode?: 'eager' | 'cuda-graph';
  error?: string;
}

/** The HF peer's JSON line. */
export interface PeerResult {
  ok: boolean;
  error?: string;
  rows?: PeerRow[];
  /** Device-to-device copy bandwidth measured by the peer (read + write), GB/s. */
  copyBandwidthGBs?: number;
  device?: string;
  [key: string]: unknown;
}

/** One batch size of the merged report. */
export interface DecodeReportRow {
  batch: number;
  graph: EngineDecodeRow | null;
  eager: EngineDecodeRow | null;
  bytesPerStep: number;
  activeExpertsPerLayer: number;
  /** bytesPerStep at the reference bandwidth, ms. */
  floorMs: number;
  /** bytesPerStep at the peer's measured copy bandwidth, ms (null when the peer did not measure it). */
  floorMsAtMeasured: number | null;
  /** floorMs / the best of our two modes. */
  ratioToFloor: number;
  peerMsPerStep: number | null;
  peerMode: 'eager' | 'cuda-graph' | null;
  /** peerMsPerStep / our best ms. */
  speedupVsPeer: number | null;
  targetMs: number | null;
  meetsTarget: boolean | null;
}

export interface DecodeReport {
  bench: 'decode';
  /** What ran: the product's Engine::step through the addon, with dummy weights. */
  path: 'Engine::step';
  model: string;
  context: number;
  weightBytes: number;
  loadSeconds: number;
  referenceBandwidth: number;
  copyBandwidthGBs: number | null;
  rows: DecodeReportRow[];
  peer: PeerResult | null;
  /** What the extras rows add to every sequence ("top-logprobs 5 + penalties"); null when the run timed none. */
  extras: string | null;
  commit: string;
  command: string;
}

/** Merges our rows, the floors and the peer; rows for the batch sizes we ran, in order. */
export function mergeDecodeReport(
  ours: readonly EngineDecodeRow[],
  floors: readonly DecodeFloor[],
  peer: PeerResult | null,
  meta: { model: string; context: number; weightBytes: number; loadSeconds: number; referenceBandwidth: number; commit: string; command: string; extras?: string | null },
): DecodeReport {
  const batches = [...new Set(ours.map((r) => r.batch))];
  const measured = peer?.ok && peer.copyBandwidthGBs ? peer.copyBandwidthGBs * 1e9 : null;
  const rows = batches.map((batch): DecodeReportRow => {
    const graph = ours.find((r) => r.batch === batch && r.graph) ?? null;
    const eager = ours.find((r) => r.batch === batch && !r.graph) ?? null;
    const floor = floors.find((f) => f.batch === batch);
    if (!floor) throw new Error(`decode bench: no floor for batch ${batch}`);
    const bytes = floor.weightBytes + floor.kvBytes;
    const floorMs = (bytes / meta.referenceBandwidth) * 1000;
    const best = Math.min(graph?.msPerStep ?? Infinity, eager?.msPerStep ?? Infinity);
    const peerRow = peer?.ok ? peer.rows?.find((r) => r.batch === batch) : undefined;
    const peerMs = peerRow?.msPerStep ?? null;
    const targetMs = decodeTargetsFor(meta.model)[batch] ?? null;
    return {
      batch,
      graph,
      eager,
      bytesPerStep: bytes,
      activeExpertsPerLayer: floor.activeExpertsPerLayer,
      floorMs,
      floorMsAtMeasured: measured ? (bytes / measured) * 1000 : null,
      ratioToFloor: floorMs / best,
      peerMsPerStep: peerMs,
      peerMode: peerMs === null ? null : (peerRow?.mode ?? 'eager'),
      speedupVsPeer: peerMs !== null ? peerMs / best : null,
      targetMs,
      meetsTarget: targetMs !== null ? best <= targetMs : null,
    };
  });
  return {
    bench: 'decode',
    path: 'Engine::step',
    model: meta.model,
    context: meta.context,
    weightBytes: meta.weightBytes,
    loadSeconds: meta.loadSeconds,
    referenceBandwidth: meta.referenceBandwidth,
    copyBandwidthGBs: measured ? measured / 1e9 : null,
    rows,
    peer,
    extras: meta.extras ?? null,
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
  const f = (v: number | null | undefined, d = 2): string => (v === null || v === undefined ? '-' : v.toFixed(d));
  // With extras: each mode's step with them, as ms and the ratio to the plain step.
  const x = (r: EngineDecodeRow | null): string => (r?.extras ? `${f(r.extras.msPerStep)} (${r.extras.ratio.toFixed(2)}x)` : '-');
  const lines = report.rows.map((r) => {
    const best = Math.min(r.graph?.msPerStep ?? Infinity, r.eager?.msPerStep ?? Infinity);
    const cells = [
      String(r.batch).padEnd(6),
      f(r.graph?.msPerStep).padEnd(9),
      f(r.eager?.msPerStep).padEnd(9),
      f((r.batch * 1000) / best, 0).padEnd(10),
      f(r.floorMs).padEnd(9),
      `${(r.ratioToFloor * 100).toFixed(0)}%`.padEnd(9),
      String(r.graph?.kernelsPerStep ?? '-').padEnd(8),
      `${f(r.peerMsPerStep)}${r.peerMode === 'cuda-graph' ? 'g' : ''}`.padEnd(8),
      (r.speedupVsPeer === null ? '-' : `${r.speedupVsPeer.toFixed(1)}x`).padEnd(8),
      (r.targetMs === null ? '-' : `<= ${r.targetMs} ${r.meetsTarget ? 'met' : 'MISSED'}`).padEnd(report.extras ? 14 : 0),
    ];
    if (report.extras) cells.push(x(r.graph).padEnd(16), x(r.eager));
    return cells.join(' ').trimEnd();
  });
  const extrasHead = report.extras ? `${' '.repeat(15 - 'target'.length)}${'graph+extras ms'.padEnd(17)}eager+extras ms` : '';
  const title = report.extras ? [`extras: ${report.extras} on every sequence (ratio to the plain step)`] : [];
  return [...title, head + extrasHead, ...lines].join('\n');
}
