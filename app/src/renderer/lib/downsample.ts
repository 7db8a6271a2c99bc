/**
 * Picks at most `maxPoints` rows, evenly spaced, always keeping the newest: recharts'
 * cost grows with points, and a 60 s chart a few hundred pixels wide cannot show more.
 */
export function downsample<T>(rows: readonly T[], maxPoints: number): T[] {
  if (rows.length <= maxPoints) return rows.slice();
  const out: T[] = [];
  const step = (rows.length - 1) / (maxPoints - 1);
  for (let i = 0; i < maxPoints; i++) out.push(rows[Math.round(i * step)]!);
  return out;
}
