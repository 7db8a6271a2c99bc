/**
 * Gets line-chart frames onto canvases without rasterizing on the page's main thread:
 * frames go to the chart worker (OffscreenCanvas), bitmaps come back and are handed to the
 * canvas's 'bitmaprenderer' context. Per chart, only the newest frame is drawn: while one
 * is being rasterized, later ones replace each other. When no worker can run (a Worker
 * blocked by the page's origin, an error in the worker) the same drawing runs inline on
 * an OffscreenCanvas of the page.
 */
import { createChartCanvases } from './chartCanvases.js';
import type { LineChartFrame } from './drawLineChart.js';
import type { ChartReply, ChartRequest } from './chartProtocol.js';
import { packFrame } from './packFrame.js';

/** Turns frames into bitmaps, somewhere. */
export interface Rasterizer {
  rasterize(id: number, frame: LineChartFrame): Promise<ImageBitmap>;
  /** Chart `id` is gone. */
  dispose(id: number): void;
}

/** The part of a Worker a WorkerRasterizer uses (tests pass a fake). */
export interface WorkerLike {
  postMessage(message: ChartRequest, transfer?: Transferable[]): void;
  onmessage: ((ev: MessageEvent<ChartReply>) => void) | null;
  onerror: ((ev: ErrorEvent) => void) | null;
}

/** Draws on the page's main thread (the fallback). */
export class InlineRasterizer implements Rasterizer {
  private readonly canvases = createChartCanvases();

  rasterize(id: number, frame: LineChartFrame): Promise<ImageBitmap> {
    try {
      return Promise.resolve(this.canvases.draw(id, frame));
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  dispose(id: number): void {
    this.canvases.dispose(id);
  }
}

/** Draws in the chart worker; a worker error fails every outstanding and later frame. */
export class WorkerRasterizer implements Rasterizer {
  private seq = 0;
  private broken: Error | null = null;
  private readonly pending = new Map<number, { resolve: (b: ImageBitmap) => void; reject: (e: Error) => void }>();

  constructor(private readonly worker: WorkerLike) {
    worker.onmessage = (ev) => {
      const m = ev.data;
      const p = this.pending.get(m.seq);
      if (!p) {
        if (m.kind === 'bitmap') m.bitmap.close();
        return;
      }
      this.pending.delete(m.seq);
      if (m.kind === 'bitmap') p.resolve(m.bitmap);
      else p.reject(new Error(`chart worker: ${m.message}`));
    };
    worker.onerror = (ev) => {
      this.broken = new Error(`chart worker failed: ${ev.message || 'could not load or run it'}`);
      for (const p of this.pending.values()) p.reject(this.broken);
      this.pending.clear();
    };
  }

  rasterize(id: number, frame: LineChartFrame): Promise<ImageBitmap> {
    if (this.broken) return Promise.reject(this.broken);
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      const packed = packFrame(frame);
      this.worker.postMessage({ kind: 'draw', id, seq, frame: packed }, [packed.data.buffer]);
    });
  }

  dispose(id: number): void {
    if (!this.broken) this.worker.postMessage({ kind: 'dispose', id });
  }
}

/** The worker while it works; inline drawing from its first failure on. */
export class FallbackRasterizer implements Rasterizer {
  private readonly inline: Rasterizer;

  constructor(
    private primary: Rasterizer | null,
    inline?: Rasterizer,
    private readonly warn: (message: string) => void = (m) => console.warn(m),
  ) {
    this.inline = inline ?? new InlineRasterizer();
  }

  async rasterize(id: number, frame: LineChartFrame): Promise<ImageBitmap> {
    if (this.primary) {
      try {
        return await this.primary.rasterize(id, frame);
      } catch (err) {
        this.warn(`${err instanceof Error ? err.message : String(err)}; charts are drawn on the page's main thread from now on`);
        this.primary = null;
      }
    }
    return this.inline.rasterize(id, frame);
  }

  dispose(id: number): void {
    this.primary?.dispose(id);
    this.inline.dispose(id);
  }
}

let shared: Rasterizer | null = null;

/** The page's one rasterizer: the chart worker when one can start, else inline drawing. */
export function sharedRasterizer(): Rasterizer {
  if (shared) return shared;
  let worker: Rasterizer | null = null;
  try {
    worker = new WorkerRasterizer(new Worker(new URL('./chart.worker.ts', import.meta.url), { type: 'module', name: 'afd-charts' }) as unknown as WorkerLike);
  } catch (err) {
    console.warn(`chart worker unavailable (${err instanceof Error ? err.message : String(err)}); charts are drawn on the page's main thread`);
  }
  shared = new FallbackRasterizer(worker);
  return shared;
}

/** Where bitmaps go: a canvas's ImageBitmapRenderingContext. */
export interface BitmapTarget {
  transferFromImageBitmap(bitmap: ImageBitmap | null): void;
}

let nextPainterId = 1;

/** One chart's painter: newest frame wins, at most one frame in flight. */
export class ChartPainter {
  readonly id = nextPainterId++;
  private inFlight = false;
  private queued: LineChartFrame | null = null;
  private disposed = false;

  constructor(
    private readonly target: BitmapTarget,
    private readonly rasterizer: Rasterizer,
    private readonly onError: (message: string) => void = (m) => console.error(m),
  ) {}

  paint(frame: LineChartFrame): void {
    if (this.disposed) return;
    if (this.inFlight) {
      this.queued = frame;
      return;
    }
    this.inFlight = true;
    this.rasterizer.rasterize(this.id, frame).then(
      (bitmap) => {
        if (this.disposed) bitmap.close();
        else this.target.transferFromImageBitmap(bitmap);
        this.next();
      },
      (err: unknown) => {
        this.onError(`chart not drawn: ${err instanceof Error ? err.message : String(err)}`);
        this.next();
      },
    );
  }

  dispose(): void {
    this.disposed = true;
    this.queued = null;
    this.rasterizer.dispose(this.id);
  }

  private next(): void {
    this.inFlight = false;
    const q = this.queued;
    this.queued = null;
    if (q) this.paint(q);
  }
}
