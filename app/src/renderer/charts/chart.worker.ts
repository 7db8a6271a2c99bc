/**
 * Chart rasterizer worker: draws LineChartFrames on OffscreenCanvases (one per chart id)
 * and posts each result back as a transferred ImageBitmap, so the Dashboard's line charts
 * cost the page's main thread only a bitmap hand-over. Messages: see chartProtocol.ts.
 */
import { createChartCanvases } from './chartCanvases.js';
import type { ChartReply, ChartRequest } from './chartProtocol.js';
import { unpackFrame } from './packFrame.js';

const canvases = createChartCanvases();
/** The worker scope's postMessage (the DOM lib types `self` as a Window). */
const reply = (m: ChartReply, transfer: Transferable[] = []): void => (self as unknown as { postMessage(m: ChartReply, t: Transferable[]): void }).postMessage(m, transfer);

self.onmessage = (ev: MessageEvent<ChartRequest>) => {
  const req = ev.data;
  if (req.kind === 'dispose') {
    canvases.dispose(req.id);
    return;
  }
  try {
    const bitmap = canvases.draw(req.id, unpackFrame(req.frame));
    reply({ kind: 'bitmap', id: req.id, seq: req.seq, bitmap }, [bitmap]);
  } catch (err) {
    reply({ kind: 'error', id: req.id, seq: req.seq, message: err instanceof Error ? err.message : String(err) });
  }
};
