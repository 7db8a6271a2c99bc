/**
 * Axis ticks at 1/2/5 x 10^k steps covering [min, max]. `minStep` keeps the step at or
 * above a floor (1 for counts, so an axis of requests never shows 0.5).
 */
export function niceTicks(min: number, max: number, maxTicks = 5, minStep = 0): { ticks: number[]; lo: number; hi: number } {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return { ticks: [0, 1], lo: 0, hi: 1 };
  if (max <= min) max = min + (min === 0 ? 1 : Math.abs(min) * 0.1);
  const raw = (max - min) / Math.max(1, maxTicks - 1);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(minStep, [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag);
  const lo = Math.floor(min / step) * step;
  const hi = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  const n = Math.round((hi - lo) / step);
  // Multiply from integers (and trim float noise) so 0.6 prints as 0.6, not 0.6000000000000001.
  for (let k = 0; k <= n; k++) ticks.push(Number((lo + k * step).toPrecision(12)));
  return { ticks, lo, hi };
}

/** Decimals that tell ticks `step` apart (0.05 -> 2, 0.5 -> 1, 5 -> 0). */
export function tickDecimals(step: number): number {
  if (!(step > 0) || !Number.isFinite(step)) return 0;
  return Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
}
