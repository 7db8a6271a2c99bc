/**
 * Pure pieces of `afd-bench expert-gemm`: the decision rule between our grouped expert
 * GEMM kernel and cuBLAS grouped GEMM, the JSON report and its table.
 *
 * Decision rule (docs/benchmarks.md "Expert GEMMs: cuBLAS grouped vs ours"): cuBLAS wins
 * at a batch when its grouped path *including* the device->host copy of the expert counts
 * (cublasWithCopy: what CudaBackend::moeExperts would run, counts are not on the host there)
 * is at least `winMargin` faster than our eager kernel, and its output agrees with ours
 * (every element written, relError <= expertGemmRelErrorBound). `autoMinTokens` is the
 * smallest measured batch from which cuBLAS wins at every larger measured batch too (the
 * value for AFD_EXPERT_GEMM_MIN_TOKENS / kCublasExpertGemmMinTokens); null when it does not
 * win at the largest batch. The fused decoder replays CUDA graphs, which grouped GEMM cannot
 * join, so there the comparison is against oursGraph and reported only.
 */
import { expertGemmAgreementHolds, expertGemmRelErrorBound, type CudaExpertGemmBenchResult, type CudaExpertGemmBenchRow } from '@afd/native';

/** cuBLAS must be at least this fraction faster to be picked (noise and the switch's cost). */
export const winMargin = 0.05;

export interface ExpertGemmDecision {
  /** The rule in words (also in the JSON, so a reader of the file alone knows it). */
  rule: string;
  /** Batches where cublasWithCopy beats ours (eager) by winMargin with agreeing output. */
  cublasWinsAt: number[];
  /** Batches where cuBLAS grouped beats our graph-replayed kernel (the fused decoder's mode), informational. */
  cublasBeatsGraphAt: number[];
  /** Smallest batch from which cuBLAS wins at every larger measured batch; null: keep ours. */
  autoMinTokens: number | null;
}

export interface ExpertGemmReportRow extends CudaExpertGemmBenchRow {
  /** ours.deviceMs / cublasWithCopy.deviceMs (> 1: cuBLAS faster); null when cuBLAS did not run. */
  cublasSpeedup: number | null;
  /** cublasWithCopy's output agrees with ours within the bf16 bound. */
  cublasAgrees: boolean;
  /** What moeExperts should run at this batch by the rule. */
  pick: 'ours' | 'cublas';
}

export interface ExpertGemmReport {
  bench: 'expert-gemm';
  model: string;
  shape: { numExperts: number; hidden: number; intermediate: number; topK: number };
  routing: string;
  layers: number;
  warmup: number;
  iterations: number;
  device: string;
  cublasLibrary: string;
  cublasVersion: string;
  cublasError: string;
  groupedGemmAvailable: boolean;
  /** The bf16 agreement bound on relError. */
  relErrorBound: number;
  rows: ExpertGemmReportRow[];
  decision: ExpertGemmDecision;
  notes: string[];
  commit: string;
  command: string;
}

export function cublasAgrees(r: CudaExpertGemmBenchRow): boolean {
  return expertGemmAgreementHolds(r.cublas) && r.oursUnwritten === 0;
}

function wins(r: CudaExpertGemmBenchRow): boolean {
  return r.cublasWithCopy.ran && r.ours.ran && cublasAgrees(r) && r.cublasWithCopy.deviceMs <= (1 - winMargin) * r.ours.deviceMs;
}

export function decideExpertGemm(rows: readonly CudaExpertGemmBenchRow[]): ExpertGemmDecision {
  const sorted = [...rows].sort((a, b) => a.batch - b.batch);
  const cublasWinsAt = sorted.filter(wins).map((r) => r.batch);
  let autoMinTokens: number | null = null;
  for (let i = sorted.length - 1; i >= 0 && wins(sorted[i]!); i--) autoMinTokens = sorted[i]!.batch;
  const cublasBeatsGraphAt = sorted
    .filter((r) => r.cublasWithCopy.ran && r.oursGraph.ran && cublasAgrees(r) && r.cublasWithCopy.deviceMs <= (1 - winMargin) * r.oursGraph.deviceMs)
    .map((r) => r.batch);
  return {
    rule: `cuBLAS at a batch when cublasWithCopy.deviceMs <= ${1 - winMargin} x ours.deviceMs and relError <= ${expertGemmRelErrorBound} with every element written; autoMinTokens = smallest batch from which that holds at every larger measured batch`,
    cublasWinsAt,
    cublasBeatsGraphAt,
    autoMinTokens,
  };
}

export function buildExpertGemmReport(
  result: CudaExpertGemmBenchResult,
  meta: Pick<ExpertGemmReport, 'model' | 'shape' | 'routing' | 'layers' | 'warmup' | 'iterations' | 'commit' | 'command'>,
): ExpertGemmReport {
  const decision = decideExpertGemm(result.rows);
  const rows = result.rows.map((r): ExpertGemmReportRow => ({
    ...r,
    cublasSpeedup: r.cublasWithCopy.ran && r.ours.ran ? r.ours.deviceMs / r.cublasWithCopy.deviceMs : null,
    cublasAgrees: cublasAgrees(r),
    pick: decision.autoMinTokens !== null && r.batch >= decision.autoMinTokens ? 'cublas' : 'ours',
  }));
  const notes = [
    'cuBLAS grouped GEMM is not graph-capturable: it takes the per-expert row counts on the host, i.e. a device->host copy and a stream sync per MoE layer (cublasWithCopy includes them; in a real step the sync also drains the work queued before it).',
    'Every variant writes f32 rows in the permuted order like ours; the grouped cuBLAS variants get there through a bf16 -> f32 widening kernel (widenMs), since cuBLAS grouped GEMM has no f32 output for bf16 inputs.',
    'Routing and permutation run once per batch outside the timing; both paths need them.',
  ];
  if (!result.groupedGemmAvailable) notes.push(`cublasGemmGroupedBatchedEx is missing in cuBLAS ${result.cublasVersion || '(not loaded)'} ${result.cublasError}`.trim());
  return {
    bench: 'expert-gemm',
    ...meta,
    device: result.deviceName,
    cublasLibrary: result.cublasLibrary,
    cublasVersion: result.cublasVersion,
    cublasError: result.cublasError,
    groupedGemmAvailable: result.groupedGemmAvailable,
    relErrorBound: expertGemmRelErrorBound,
    rows,
    decision,
    notes,
  };
}

/** A fixed-width table for people (the JSON is the contract). Times are device ms (CUDA events, median). */
export function formatExpertGemmTable(report: ExpertGemmReport): string {
  const ms = (t: { ran: boolean; deviceMs: number }) => (t.ran ? t.deviceMs.toFixed(3) : '-');
  const head = 'batch  active  floor ms  ours     ours graph  cuBLAS+copy  cuBLAS known  cuBLAS graph  per-expert  ours TB/s  of floor  relErr    pick';
  const lines = report.rows.map((r) =>
    [
      String(r.batch).padEnd(6),
      String(r.activeExperts).padEnd(7),
      r.floorMs.toFixed(3).padEnd(9),
      ms(r.ours).padEnd(8),
      ms(r.oursGraph).padEnd(11),
      ms(r.cublasWithCopy).padEnd(12),
      ms(r.cublasCountsKnown).padEnd(13),
      ms(r.cublasCountsKnownGraph).padEnd(13),
      ms(r.cublasPerExpert).padEnd(11),
      (r.ours.achievedGBs / 1000).toFixed(2).padEnd(10),
      `${(r.ours.ratioToFloor * 100).toFixed(0)}%`.padEnd(9),
      (r.cublas.ran ? r.cublas.relError.toExponential(1) : '-').padEnd(9),
      r.pick,
    ].join(' '),
  );
  const d = report.decision;
  const summary = `cuBLAS wins at: ${d.cublasWinsAt.join(', ') || 'none'}; autoMinTokens: ${d.autoMinTokens ?? 'none (keep ours)'}`;
  const errors = report.rows.flatMap((r) => (r.cublasWithCopy.error ? [`batch ${r.batch}: cuBLAS: ${r.cublasWithCopy.error}`] : []));
  return [head, ...lines, summary, ...errors.slice(0, 1)].join('\n');
}
