/**
 * A chart as a PNG: its title and legend over the plot, on the panel's background (the
 * chart's own canvas is transparent, with light text meant for the dark console). Drawn
 * once on the page's thread when the user exports; the live charts stay in the worker.
 */
import { drawLineChart, rasterSize, type LineChartFrame } from './drawLineChart.js';

const BACKGROUND = '#1c2027';
const TITLE = '#e6e9ef';
/** Header height above the plot, CSS pixels. */
const HEAD_PX = 26;

export async function chartPng(frame: LineChartFrame, title: string, legend: readonly { label: string; color: string }[]): Promise<Blob> {
  const { width, height } = rasterSize(frame);
  const head = Math.round(HEAD_PX * frame.dpr);
  const plot = new OffscreenCanvas(width, height);
  const out = new OffscreenCanvas(width, height + head);
  const plotCtx = plot.getContext('2d');
  const ctx = out.getContext('2d');
  if (!plotCtx || !ctx) throw new Error('PNG not made: this browser gives no 2d canvas context');
  drawLineChart(plotCtx, frame);
  ctx.fillStyle = BACKGROUND;
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.setTransform(frame.dpr, 0, 0, frame.dpr, 0, 0);
  ctx.textBaseline = 'middle';
  ctx.font = '600 13px system-ui, sans-serif';
  ctx.fillStyle = TITLE;
  ctx.fillText(title, 8, HEAD_PX / 2);
  let x = 8 + ctx.measureText(title).width + 16;
  ctx.font = '12px system-ui, sans-serif';
  for (const l of legend) {
    ctx.fillStyle = l.color;
    const text = `● ${l.label}`;
    ctx.fillText(text, x, HEAD_PX / 2);
    x += ctx.measureText(text).width + 12;
  }
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.drawImage(plot, 0, head);
  return out.convertToBlob({ type: 'image/png' });
}
