/**
 * A chart history already full: `minutes` of 10 Hz points of every Dashboard series for
 * the synthetic ranks (F0.., A0..), wavy values ending at endMs. The frame-time benchmark
 * starts with it so its charts draw the 15-minute window full, as a console that ran that
 * long would.
 */
import type { ChartHistoryData } from '@afd/shared';
import { ChartHistory } from '../../common/ChartHistory.js';
import { prefixKey, stepKey } from '../../common/chartRow.js';

export function syntheticHistory(opts: { attentionRanks: number; ffnRanks: number; minutes: number; endMs: number }): ChartHistoryData {
  const h = new ChartHistory();
  const points = opts.minutes * 60 * 10;
  for (let i = 0; i < points; i++) {
    const tMs = opts.endMs - (points - 1 - i) * 100;
    const wave = (period: number, phase = 0): number => 0.5 + 0.5 * Math.sin((i / period) * 2 * Math.PI + phase);
    const values: Record<string, number> = {
      tokensPerSecond: 400 + 300 * wave(600) + 40 * wave(7),
      running: Math.round(8 + 8 * wave(900)),
      waiting: Math.round(4 * wave(300, 1)),
      kvUsage: 30 + 40 * wave(1200),
      kvCached: 10 + 20 * wave(1500, 2),
      hits: 90 + 10 * wave(50),
      misses: 2 * wave(400),
      captures: 0,
      hitRate: 97 + 2 * wave(2000),
      prefixHitRate: 35 + 10 * wave(800),
    };
    for (let r = 0; r < opts.ffnRanks; r++) values[stepKey(`F${r}`)] = 3 + wave(200, r) + 0.3 * wave(5);
    for (let r = 0; r < opts.attentionRanks; r++) {
      values[stepKey(`A${r}`)] = 4 + wave(250, r) + 0.3 * wave(6);
      values[prefixKey(`A${r}`)] = 25 + 5 * r + 10 * wave(700, r);
    }
    h.push({ tMs, values });
  }
  return h.toData();
}
