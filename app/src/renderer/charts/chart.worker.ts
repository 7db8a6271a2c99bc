/**
 * Chart rasterizer worker: draws LineChartFrames on OffscreenCanvases (one per chart id)
 * and posts each result back as a transferred ImageBitmap, so the Dashboard's line charts
 * cost the page's main thread only a bitmap hand-over. Messages: see chartProtocol.ts.
 */
import { drawLineChart, rasterSize } from './drawLineChart.js';
import type { ChartReply, ChartRequest } from './chartProtocol.js';

const canvases = new Map<number, OffscreenCanvas>();
/** The worker scope's postMessage (the DOM lib types `self` as a Window). */
const reply = (m: ChartReply, transfer: Transferable[] = []): void => (self as unknown as { postMessage(m: ChartReply, t: Transferable[]): void }).postMessage(m, transfer);

self.onmessage = (ev: MessageEvent<ChartRequest>) => {
  const req = ev.data;
  if (req.kind === 'dispose') {
    canvases.delete(req.id);
    return;
  }
  try {
    const { width, height } = rasterSize(req.frame);
    let canvas = canvases.get(req.id);
    if (!canvas || canvas.width !== width || canvas.height !== height) {
      canvas = new OffscreenCanvas(width, height);
      canvases.set(req.id, canvas);
    }
    const ctx = canvas.getContext('2d');
    if (!ctx) throw new Error('OffscreenCanvas has no 2d context');
    drawLineChart(ctx, req.frame);
    const bitmap = canvas.transferToImageBitmap();
    reply({ kind: 'bitmap', id: req.id, seq: req.seq, bitmap }, [bitmap]);
  } catch (err) {
    reply({ kind: 'error', id: req.id, seq: req.seq, message: err instanceof Error ? err.message : String(err) });
  }
};
