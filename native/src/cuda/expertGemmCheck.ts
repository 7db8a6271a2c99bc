/**
 * GPU-suite checks of the cuBLAS grouped expert GEMM path (expert-gemm-cublas.h) against
 * our grouped kernel, through the expert GEMM benchmark entry on small routed batches:
 * every output element written (outputs are NaN-poisoned first) and relError within the
 * bf16 bound, for the grouped path and the per-expert baseline. A cuBLAS older than 12.5
 * (no cublasGemmGroupedBatchedEx) is a note, not a failure; a newer one without it fails.
 */
import { expertGemmAgreementHolds, expertGemmRelErrorBound, type CudaExpertGemmBenchOptions, type CudaExpertGemmBenchRow, type NativeAddon } from '../index.js';
import type { GpuCheck } from './gpuCheck.js';


/** Skewed routing (uneven counts, empty experts, several cuBLAS groups), then the real Qwen3-30B-A3B shape. */
export const expertGemmCheckCases: readonly { label: string; options: CudaExpertGemmBenchOptions }[] = [
  {
    label: '16 experts top-4, hidden 256, intermediate 96, skewed routing',
    options: { numExperts: 16, hidden: 256, intermediate: 96, topK: 4, batches: [1, 5, 37, 64], routing: 'skewed', layers: 2, warmup: 1, iterations: 2 },
  },
  {
    label: 'Qwen3-30B-A3B experts (128 top-8, 2048 x 768), uniform routing',
    options: { batches: [3, 40], layers: 1, warmup: 1, iterations: 2 },
  },
];

/** Major.minor of a dotted version, [0, 0] when unknown. */
function majorMinor(version: string): [number, number] {
  const [major, minor] = version.split('.').map(Number);
  return [Number.isFinite(major) ? major! : 0, Number.isFinite(minor) ? minor! : 0];
}

function agreementDetail(name: string, a: CudaExpertGemmBenchRow['cublas']): string {
  return a.ran ? `${name} relError ${a.relError.toExponential(2)} max ${a.maxError.toExponential(2)} unwritten ${a.unwritten}` : `${name} did not run`;
}

export function expertGemmChecks(addon: Pick<NativeAddon, 'cudaExpertGemmBench'>, notes: string[]): GpuCheck[] {
  const checks: GpuCheck[] = [];
  for (const c of expertGemmCheckCases) {
    let r: ReturnType<NativeAddon['cudaExpertGemmBench']>;
    try {
      r = addon.cudaExpertGemmBench(c.options);
    } catch (err) {
      checks.push({ suite: 'conformance', name: `expert GEMM cuBLAS grouped vs ours: ${c.label}`, passed: false, detail: `the benchmark threw: ${(err as Error).message}` });
      continue;
    }
    if (r.cublasError) {
      notes.push(`expert GEMM (cuBLAS grouped): cuBLAS did not load: ${r.cublasError}`);
      return checks;
    }
    if (!r.groupedGemmAvailable) {
      const [major, minor] = majorMinor(r.cublasVersion);
      const old = major < 12 || (major === 12 && minor < 5);
      const why = `cuBLAS ${r.cublasVersion || '(unknown version)'} (${r.cublasLibrary}) lacks cublasGemmGroupedBatchedEx`;
      if (old) {
        notes.push(`expert GEMM (cuBLAS grouped): ${why} (added in 12.5): not checked`);
      } else {
        checks.push({ suite: 'conformance', name: `expert GEMM cuBLAS grouped vs ours: ${c.label}`, passed: false, detail: `${why} although it is >= 12.5: the symbol did not resolve` });
      }
      return checks;
    }
    for (const row of r.rows) {
      const ran = row.cublasWithCopy.ran && row.cublasCountsKnown.ran && row.cublasPerExpert.ran;
      const errors = [row.cublasWithCopy.error, row.cublasCountsKnown.error, row.cublasPerExpert.error].filter(Boolean);
      checks.push({
        suite: 'conformance',
        name: `expert GEMM cuBLAS grouped vs ours: ${c.label}, batch ${row.batch} (${row.activeExperts} experts active)`,
        passed: ran && row.oursUnwritten === 0 && expertGemmAgreementHolds(row.cublas) && expertGemmAgreementHolds(row.perExpert),
        detail: `${agreementDetail('grouped', row.cublas)}; ${agreementDetail('per-expert', row.perExpert)} (bound ${expertGemmRelErrorBound}); ours unwritten ${row.oursUnwritten}${errors.length ? `; errors: ${errors.join(' | ')}` : ''}`,
      });
    }
  }
  return checks;
}
