/**
 * The rule the GPU suite judges the CUDA engine's log-probability rows by, against the CPU
 * engine's on the same plan: the same row layout (width, row offsets); per entry the
 * values within `tolerance` (bf16 logits move them by far less); ids equal wherever the
 * CPU's neighbouring values are more than 2 x tolerance apart (closer ones may swap under
 * bf16 noise); the chosen token's value and rank only where both chose the same token,
 * and the rank only when no top entry lies within 2 x tolerance of the chosen value.
 * Banned tokens (a -Infinity logit: a mask or a ban) are exact: -Infinity on both sides,
 * with equal ids (they follow every allowed token, lower id first).
 */
import type { TokenLogprobs } from '@afd/shared';

export interface LogprobsComparison {
  passed: boolean;
  /** Largest |cuda - cpu| over the compared values. */
  worstValueError: number;
  /** Rows compared, and rows whose chosen token differs (sampled rows; not a failure). */
  rows: number;
  chosenDiffer: number;
  /** What failed, for the report. */
  problems: string[];
}

export function compareLogprobs(cpu: TokenLogprobs, cuda: TokenLogprobs, tolerance: number): LogprobsComparison {
  const problems: string[] = [];
  const out: LogprobsComparison = { passed: false, worstValueError: 0, rows: cpu.ranks.length, chosenDiffer: 0, problems };
  if (cpu.width !== cuda.width) problems.push(`width ${cuda.width}, cpu ${cpu.width}`);
  if (cpu.rowOffsets.join(',') !== cuda.rowOffsets.join(',')) problems.push(`rowOffsets ${cuda.rowOffsets}, cpu ${cpu.rowOffsets}`);
  if (problems.length > 0) return out;
  const W = cpu.width;
  const near = 2 * tolerance;
  for (let r = 0; r < out.rows; r++) {
    const ids = (l: TokenLogprobs, j: number): number => l.tokenIds[r * W + j]!;
    const val = (l: TokenLogprobs, j: number): number => l.logprobs[r * W + j]!;
    const sameChosen = ids(cpu, 0) === ids(cuda, 0);
    if (!sameChosen) out.chosenDiffer += 1;
    for (let j = sameChosen ? 0 : 1; j < W; j++) {
      const a = val(cpu, j);
      const b = val(cuda, j);
      if (Number.isNaN(a) !== Number.isNaN(b)) {
        problems.push(`row ${r} entry ${j}: cuda ${b}, cpu ${a} (padding differs)`);
        continue;
      }
      if (Number.isNaN(a)) continue;
      if (a === -Infinity || b === -Infinity) {
        if (a !== b) problems.push(`row ${r} entry ${j}: cuda ${b}, cpu ${a} (a banned token on one side only)`);
        else if (ids(cpu, j) !== ids(cuda, j)) problems.push(`row ${r} entry ${j}: banned cuda id ${ids(cuda, j)}, cpu ${ids(cpu, j)}`);
        continue;
      }
      out.worstValueError = Math.max(out.worstValueError, Math.abs(a - b));
      if (j === 0) continue;
      const separated = (j === 1 || val(cpu, j - 1) - a > near) && (j + 1 >= W || Number.isNaN(val(cpu, j + 1)) || a - val(cpu, j + 1) > near);
      if (separated && ids(cpu, j) !== ids(cuda, j)) problems.push(`row ${r} top ${j}: cuda id ${ids(cuda, j)}, cpu ${ids(cpu, j)}`);
    }
    const chosen = val(cpu, 0);
    let crowded = false;
    for (let j = 1; j < W; j++) crowded = crowded || (ids(cpu, j) !== ids(cpu, 0) && Math.abs(val(cpu, j) - chosen) <= near);
    if (sameChosen && !crowded && cpu.ranks[r] !== cuda.ranks[r]) problems.push(`row ${r}: rank ${cuda.ranks[r]}, cpu ${cpu.ranks[r]}`);
  }
  if (out.worstValueError > tolerance) problems.push(`worst value error ${out.worstValueError.toExponential(2)} > ${tolerance}`);
  out.passed = problems.length === 0;
  return out;
}
