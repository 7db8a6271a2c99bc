/**
 * One OffscreenCanvas per chart id, resized with its frame: draws a LineChartFrame and
 * hands the result over as an ImageBitmap. Used by the chart worker and, when no worker
 * can run, by the page's inline rasterizer.
 */
import { drawLineChart, rasterSize, type LineChartFrame } from './drawLineChart.js';

export interface ChartCanvases {
  /** Draws `frame` on chart `id`'s canvas; throws when the canvas has no 2d context. */
  draw(id: number, frame: LineChartFrame): ImageBitmap;
  /** Chart `id` is gone: drop its canvas. */
  dispose(id: number): void;
}

export function createChartCanvases(): ChartCanvases {
  const canvases = new Map<number, OffscreenCanvas>();
  return {
    draw(id, frame) {
      const { width, height } = rasterSize(frame);
      let canvas = canvases.get(id);
      if (!canvas || canvas.width !== width || canvas.height !== height) {
        canvas = new OffscreenCanvas(width, height);
        canvases.set(id, canvas);
      }
      const ctx = canvas.getContext('2d');
      if (!ctx) throw new Error('OffscreenCanvas has no 2d context');
      drawLineChart(ctx, frame);
      return canvas.transferToImageBitmap();
    },
    dispose(id) {
      canvases.delete(id);
    },
  };
}
