import { describe, expect, it, vi } from 'vitest';
import { ChartPainter, FallbackRasterizer, WorkerRasterizer, type Rasterizer, type WorkerLike } from './ChartPainter.js';
import type { ChartReply, ChartRequest } from './chartProtocol.js';
import type { LineChartFrame } from './drawLineChart.js';

const frame = (widthPx: number): LineChartFrame => ({ widthPx, heightPx: 100, dpr: 1, t: new Float64Array([-1, 0]), columns: [new Float64Array([1, 2])], colors: ['#fff'], integerAxis: false });
const bitmap = (tag: number): ImageBitmap => ({ width: tag, height: 1, close: vi.fn() }) as unknown as ImageBitmap;

/** A rasterizer whose frames finish when the test says so. */
function manualRasterizer() {
  const calls: { id: number; frame: LineChartFrame; resolve: (b: ImageBitmap) => void; reject: (e: Error) => void }[] = [];
  const r: Rasterizer & { calls: typeof calls; disposed: number[] } = {
    calls,
    disposed: [],
    rasterize: (id, f) => new Promise((resolve, reject) => calls.push({ id, frame: f, resolve, reject })),
    dispose: (id) => r.disposed.push(id),
  };
  return r;
}
const flush = () => new Promise((r) => setTimeout(r, 0));

describe('ChartPainter', () => {
  it('draws the newest frame only, one at a time', async () => {
    const r = manualRasterizer();
    const shown: number[] = [];
    const p = new ChartPainter({ transferFromImageBitmap: (b) => shown.push(b!.width) }, r);
    p.paint(frame(1));
    p.paint(frame(2));
    p.paint(frame(3));
    expect(r.calls.map((c) => c.frame.widthPx)).toEqual([1]);
    r.calls[0]!.resolve(bitmap(10));
    await flush();
    // Frame 2 was replaced by 3 while 1 was in flight.
    expect(shown).toEqual([10]);
    expect(r.calls.map((c) => c.frame.widthPx)).toEqual([1, 3]);
    r.calls[1]!.resolve(bitmap(30));
    await flush();
    expect(shown).toEqual([10, 30]);
  });

  it('reports a failed frame and keeps drawing later ones', async () => {
    const r = manualRasterizer();
    const errors: string[] = [];
    const p = new ChartPainter({ transferFromImageBitmap: () => undefined }, r, (m) => errors.push(m));
    p.paint(frame(1));
    p.paint(frame(2));
    r.calls[0]!.reject(new Error('boom'));
    await flush();
    expect(errors).toEqual(['chart not drawn: boom']);
    expect(r.calls).toHaveLength(2);
  });

  it('closes bitmaps that arrive after dispose and tells the rasterizer', async () => {
    const r = manualRasterizer();
    const target = { transferFromImageBitmap: vi.fn() };
    const p = new ChartPainter(target, r);
    p.paint(frame(1));
    p.dispose();
    const b = bitmap(1);
    r.calls[0]!.resolve(b);
    await flush();
    expect(target.transferFromImageBitmap).not.toHaveBeenCalled();
    expect(b.close).toHaveBeenCalled();
    expect(r.disposed).toEqual([p.id]);
    p.paint(frame(2));
    expect(r.calls).toHaveLength(1);
  });
});

function fakeWorker() {
  const posted: ChartRequest[] = [];
  const transferred: (Transferable[] | undefined)[] = [];
  const w: WorkerLike & { posted: ChartRequest[]; transferred: (Transferable[] | undefined)[]; reply(m: ChartReply): void; fail(message: string): void } = {
    posted,
    transferred,
    onmessage: null,
    onerror: null,
    postMessage: (m, t) => {
      posted.push(m);
      transferred.push(t);
    },
    reply: (m) => w.onmessage?.({ data: m } as MessageEvent<ChartReply>),
    fail: (message) => w.onerror?.({ message } as ErrorEvent),
  };
  return w;
}

describe('WorkerRasterizer', () => {
  it('matches replies to requests by sequence number', async () => {
    const w = fakeWorker();
    const r = new WorkerRasterizer(w);
    const a = r.rasterize(7, frame(1));
    const b = r.rasterize(8, frame(2));
    expect(w.posted.map((m) => m.kind === 'draw' && [m.id, m.seq])).toEqual([
      [7, 1],
      [8, 2],
    ]);
    // The frame travels packed: its arrays in one buffer, handed over (transferred).
    const first = w.posted[0]!;
    expect(first.kind === 'draw' && [...first.frame.data]).toEqual([-1, 0, 1, 2]);
    expect(w.transferred[0]).toEqual([first.kind === 'draw' && first.frame.data.buffer]);
    w.reply({ kind: 'bitmap', id: 8, seq: 2, bitmap: bitmap(2) });
    w.reply({ kind: 'error', id: 7, seq: 1, message: 'no context' });
    expect((await b).width).toBe(2);
    await expect(a).rejects.toThrow('chart worker: no context');
    r.dispose(7);
    expect(w.posted[2]).toEqual({ kind: 'dispose', id: 7 });
  });

  it('fails outstanding and later frames once the worker errors', async () => {
    const w = fakeWorker();
    const r = new WorkerRasterizer(w);
    const a = r.rasterize(1, frame(1));
    w.fail('script blocked');
    await expect(a).rejects.toThrow('chart worker failed: script blocked');
    await expect(r.rasterize(1, frame(1))).rejects.toThrow('script blocked');
  });
});

describe('FallbackRasterizer', () => {
  it('switches to inline drawing for good after the worker fails', async () => {
    const worker = manualRasterizer();
    const inline = manualRasterizer();
    const warnings: string[] = [];
    const r = new FallbackRasterizer(worker, inline, (m) => warnings.push(m));
    const first = r.rasterize(1, frame(1));
    worker.calls[0]!.reject(new Error('chart worker failed: blocked'));
    await flush();
    expect(inline.calls).toHaveLength(1);
    inline.calls[0]!.resolve(bitmap(5));
    expect((await first).width).toBe(5);
    expect(warnings[0]).toMatch(/blocked; charts are drawn on the page's main thread/);
    void r.rasterize(1, frame(2));
    expect(worker.calls).toHaveLength(1);
    expect(inline.calls).toHaveLength(2);
  });
});
