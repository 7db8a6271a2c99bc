/** Messages between the page (ChartPainter) and the chart worker (chart.worker.ts). */
import type { PackedFrame } from './packFrame.js';

export type ChartRequest =
  /** Draw a frame for chart `id` (its arrays packed into one transferred buffer); `seq` comes back with the bitmap. */
  | { kind: 'draw'; id: number; seq: number; frame: PackedFrame }
  /** The chart is gone: drop its canvas. */
  | { kind: 'dispose'; id: number };

export type ChartReply =
  | { kind: 'bitmap'; id: number; seq: number; bitmap: ImageBitmap }
  /** Drawing failed in the worker (the page falls back to drawing itself). */
  | { kind: 'error'; id: number; seq: number; message: string };
