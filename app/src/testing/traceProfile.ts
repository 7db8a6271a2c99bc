/**
 * Per-frame main-thread work of a renderer, from a Chrome trace (categories
 * devtools.timeline, disabled-by-default-devtools.timeline(.frame), blink.user_timing,
 * toplevel, v8.execute). A frame is the span between two BeginMainThreadFrame events on the
 * renderer's main thread; its work is the summed duration of the top-level tasks (RunTask
 * and anything not nested in another complete event) that start in it: the BeginMainFrame
 * task itself (rAF, style, layout, paint, commit) plus every timer, message and React task
 * between two frames. A span without frames longer than 1.5 vsyncs is cut at vsync ticks. Both wall time (`dur`) and thread CPU time (`tdur`) are summed: on a
 * machine shared with other processes, wall time also counts time the thread waited for a
 * core; CPU time is what the renderer itself spent.
 */
import { percentile } from '../common/percentile.js';

/** The fields of a Chrome trace event this module reads. */
export interface TraceEvent {
  name: string;
  cat?: string;
  /** Phase: X complete, I/R instant, M metadata, ... */
  ph: string;
  pid: number;
  tid: number;
  /** Start, microseconds. */
  ts: number;
  /** Wall duration of a complete event, microseconds. */
  dur?: number;
  /** Thread CPU duration of a complete event, microseconds. */
  tdur?: number;
  args?: { name?: string; data?: Record<string, unknown> };
}

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export interface FrameProfile {
  /** The renderer main thread profiled. */
  pid: number;
  tid: number;
  /** Profiled span (between the marks, or the whole trace), ms. */
  windowMs: number;
  budgetMs: number;
  /** Main-thread frames (BeginMainFrame to BeginMainFrame). */
  frames: number;
  /** Intervals work is summed over: the frames, with idle stretches cut at vsync ticks. */
  intervals: number;
  /** Time between consecutive main-thread frames, ms. */
  frameSpanMs: Percentiles;
  /** Main-thread work per interval, wall clock, ms. */
  workWallMs: Percentiles;
  /** Main-thread work per interval, thread CPU time, ms. */
  workCpuMs: Percentiles;
  framesOverBudgetWall: number;
  framesOverBudgetCpu: number;
  /** Share of the window the main thread was busy (wall) / on a CPU. */
  busyWall: number;
  busyCpu: number;
  /** The longest top-level tasks (wall), with their biggest children by self time. */
  longestTasks: { atMs: number; wallMs: number; cpuMs: number; top: string[] }[];
  /** Event names by self time over the window (nested events subtracted), largest first. */
  selfTime: { name: string; wallMs: number; cpuMs: number; count: number }[];
}

export interface ProfileOptions {
  /** Performance marks (blink.user_timing) that bound the profiled span. */
  startMark?: string;
  endMark?: string;
  /** Per-frame work budget, ms (default 16). */
  budgetMs?: number;
  /** How many self-time rows to keep (default 14). */
  topNames?: number;
  /** Display refresh interval, ms (default 1000 / 60). */
  vsyncMs?: number;
}

export function percentiles(values: readonly number[]): Percentiles {
  const s = [...values].sort((a, b) => a - b);
  return { p50: percentile(s, 50) ?? 0, p95: percentile(s, 95) ?? 0, p99: percentile(s, 99) ?? 0, max: s[s.length - 1] ?? 0 };
}

const round = (v: number): number => Math.round(v * 1000) / 1000;
const roundP = (p: Percentiles): Percentiles => ({ p50: round(p.p50), p95: round(p.p95), p99: round(p.p99), max: round(p.max) });

/** The main thread to profile: where the start mark was recorded, else the busiest CrRendererMain. */
function pickThread(events: readonly TraceEvent[], startMark: string | undefined): { pid: number; tid: number } {
  if (startMark) {
    const m = events.find((e) => e.name === startMark && e.cat?.includes('user_timing'));
    if (m) return { pid: m.pid, tid: m.tid };
  }
  const mains = new Set(events.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
  const busy = new Map<string, number>();
  for (const e of events) {
    const k = `${e.pid}:${e.tid}`;
    if (e.ph === 'X' && e.name === 'RunTask' && mains.has(k)) busy.set(k, (busy.get(k) ?? 0) + (e.dur ?? 0));
  }
  const best = [...busy.entries()].sort((a, b) => b[1] - a[1])[0];
  if (!best) throw new Error('trace has no renderer main thread (CrRendererMain) with RunTask events: record it with the devtools.timeline categories');
  const [pid, tid] = best[0].split(':').map(Number) as [number, number];
  return { pid, tid };
}

/** Computes per-frame work and where the time went; throws when the trace lacks what it needs. */
export function profileFrames(events: readonly TraceEvent[], opts: ProfileOptions = {}): FrameProfile {
  const budgetMs = opts.budgetMs ?? 16;
  const { pid, tid } = pickThread(events, opts.startMark);
  const onThread = events.filter((e) => e.pid === pid && e.tid === tid);
  const markTs = (name: string | undefined): number | undefined => (name ? onThread.find((e) => e.name === name)?.ts : undefined);
  const complete = onThread.filter((e) => e.ph === 'X' && e.dur !== undefined);
  const t0 = markTs(opts.startMark) ?? Math.min(...complete.map((e) => e.ts));
  const t1 = markTs(opts.endMark) ?? Math.max(...complete.map((e) => e.ts + e.dur!));
  if (!(t1 > t0)) throw new Error(`trace window is empty (start ${t0}, end ${t1}): were the marks ${opts.startMark} / ${opts.endMark} recorded?`);

  const inWindow = complete.filter((e) => e.ts >= t0 && e.ts < t1).sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
  // Nesting: self time per name, and the top-level tasks.
  const self = new Map<string, { wall: number; cpu: number; count: number }>();
  const stack: { e: TraceEvent; selfWall: number; selfCpu: number; children: Map<string, number> }[] = [];
  const topLevel: { e: TraceEvent; children: Map<string, number> }[] = [];
  const close = (): void => {
    const f = stack.pop()!;
    const acc = self.get(f.e.name) ?? { wall: 0, cpu: 0, count: 0 };
    acc.wall += Math.max(0, f.selfWall);
    acc.cpu += Math.max(0, f.selfCpu);
    acc.count += 1;
    self.set(f.e.name, acc);
    // Credit this event's self time to its top-level task's breakdown.
    const root = stack[0] ?? f;
    root.children.set(f.e.name, (root.children.get(f.e.name) ?? 0) + Math.max(0, f.selfWall));
  };
  for (const e of inWindow) {
    while (stack.length > 0 && stack[stack.length - 1]!.e.ts + stack[stack.length - 1]!.e.dur! <= e.ts) close();
    const parent = stack[stack.length - 1];
    if (parent) {
      parent.selfWall -= e.dur!;
      parent.selfCpu -= e.tdur ?? 0;
    }
    const frame = { e, selfWall: e.dur!, selfCpu: e.tdur ?? 0, children: new Map<string, number>() };
    if (!parent) topLevel.push(frame);
    stack.push(frame);
  }
  while (stack.length > 0) close();

  // A frame starts with the task that runs BeginMainFrame (the instant event is emitted a
  // little into that task, which belongs to the new frame, not the one before).
  const frameStart = (ts: number): number => {
    let lo = 0;
    let hi = topLevel.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const t = topLevel[mid]!.e;
      if (t.ts > ts) hi = mid - 1;
      else if (t.ts + t.dur! <= ts) lo = mid + 1;
      else return t.ts;
    }
    return ts;
  };
  const begins = onThread
    .filter((e) => e.name === 'BeginMainThreadFrame' && e.ts >= t0 && e.ts <= t1)
    .map((e) => frameStart(e.ts))
    .sort((a, b) => a - b);
  if (begins.length < 2) throw new Error('trace has fewer than two BeginMainThreadFrame events in the window: record disabled-by-default-devtools.timeline.frame');
  const spans: number[] = [];
  for (let i = 0; i + 1 < begins.length; i++) spans.push((begins[i + 1]! - begins[i]!) / 1000);
  // Work is summed per frame interval; an interval with no BeginMainFrame for more than
  // 1.5 vsyncs (nothing asked for a frame, or the compositor was starved) is cut at vsync
  // ticks, so two updates 100 ms apart never count as one frame's work.
  const vsyncUs = (opts.vsyncMs ?? 1000 / 60) * 1000;
  const bounds: number[] = [];
  for (let i = 0; i + 1 < begins.length; i++) {
    const a = begins[i]!;
    bounds.push(a);
    if (begins[i + 1]! - a > 1.5 * vsyncUs) for (let tick = a + vsyncUs; tick <= begins[i + 1]! - vsyncUs / 2; tick += vsyncUs) bounds.push(tick);
  }
  bounds.push(begins[begins.length - 1]!);
  const wall: number[] = [];
  const cpu: number[] = [];
  let k = 0;
  for (let i = 0; i + 1 < bounds.length; i++) {
    const a = bounds[i]!;
    const b = bounds[i + 1]!;
    let w = 0;
    let c = 0;
    while (k < topLevel.length && topLevel[k]!.e.ts < a) k++;
    for (; k < topLevel.length && topLevel[k]!.e.ts < b; k++) {
      w += topLevel[k]!.e.dur!;
      c += topLevel[k]!.e.tdur ?? 0;
    }
    wall.push(w / 1000);
    cpu.push(c / 1000);
  }
  const windowUs = t1 - t0;
  const sumWall = topLevel.reduce((s, t) => s + t.e.dur!, 0);
  const sumCpu = topLevel.reduce((s, t) => s + (t.e.tdur ?? 0), 0);
  const longestTasks = [...topLevel]
    .sort((a, b) => b.e.dur! - a.e.dur!)
    .slice(0, 5)
    .map((t) => ({
      atMs: round((t.e.ts - t0) / 1000),
      wallMs: round(t.e.dur! / 1000),
      cpuMs: round((t.e.tdur ?? 0) / 1000),
      top: [...t.children.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 4)
        .map(([n, us]) => `${n} ${round(us / 1000)}`),
    }));
  const selfTime = [...self.entries()]
    .map(([name, v]) => ({ name, wallMs: round(v.wall / 1000), cpuMs: round(v.cpu / 1000), count: v.count }))
    .sort((a, b) => b.wallMs - a.wallMs)
    .slice(0, opts.topNames ?? 14);
  return {
    pid,
    tid,
    windowMs: round(windowUs / 1000),
    budgetMs,
    frames: spans.length,
    intervals: wall.length,
    frameSpanMs: roundP(percentiles(spans)),
    workWallMs: roundP(percentiles(wall)),
    workCpuMs: roundP(percentiles(cpu)),
    framesOverBudgetWall: wall.filter((w) => w > budgetMs).length,
    framesOverBudgetCpu: cpu.filter((c) => c > budgetMs).length,
    busyWall: round(sumWall / windowUs),
    busyCpu: round(sumCpu / windowUs),
    longestTasks,
    selfTime,
  };
}
