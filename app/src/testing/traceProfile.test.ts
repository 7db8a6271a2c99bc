import { describe, expect, it } from 'vitest';
import { percentiles, profileFrames, type TraceEvent } from './traceProfile.js';

const PID = 7;
const TID = 7;
const ms = (v: number): number => v * 1000;
const x = (name: string, atMs: number, durMs: number, cpuMs = durMs, tid = TID): TraceEvent => ({ name, ph: 'X', pid: PID, tid, ts: ms(atMs), dur: ms(durMs), tdur: ms(cpuMs) });
const instant = (name: string, atMs: number, cat = 'disabled-by-default-devtools.timeline.frame'): TraceEvent => ({ name, cat, ph: 'I', pid: PID, tid: TID, ts: ms(atMs) });

/** Frames every 16 ms, but the frame at 32 ms carries a 20 ms fold (18 ms CPU) that delays the next to 58 ms. */
function trace(): TraceEvent[] {
  return [
    { name: 'thread_name', ph: 'M', pid: PID, tid: TID, ts: 0, args: { name: 'CrRendererMain' } },
    { name: 'thread_name', ph: 'M', pid: PID, tid: 99, ts: 0, args: { name: 'Compositor' } },
    instant('afd-bench-start', 0, 'blink.user_timing'),
    // BeginMainFrame tasks: the instant is emitted a little into the task.
    ...[0, 16, 32, 58, 74].flatMap((t) => [x('RunTask', t, 2, 1.5), x('Layout', t + 0.5, 1), instant('BeginMainThreadFrame', t + 0.2)]),
    // A fold task in the frame that starts at 32: 20 ms wall, 18 ms CPU, JS inside it.
    x('RunTask', 34, 20, 18),
    x('FunctionCall', 34.5, 15, 14),
    x('Paint', 50, 3, 3),
    // Busy work on another thread is not the main thread's.
    x('RunTask', 10, 30, 30, 99),
    instant('afd-bench-end', 80, 'blink.user_timing'),
  ];
}

describe('profileFrames', () => {
  it('sums the main thread work of each frame between BeginMainFrame tasks', () => {
    const p = profileFrames(trace(), { startMark: 'afd-bench-start', endMark: 'afd-bench-end', budgetMs: 16 });
    expect({ pid: p.pid, tid: p.tid }).toEqual({ pid: PID, tid: TID });
    expect(p.windowMs).toBe(80);
    expect(p.frames).toBe(4);
    // The 26 ms frame (> 1.5 vsyncs) gets a tick at 48.7 ms; its fold started before it, at 34 ms.
    expect(p.intervals).toBe(5);
    expect(p.frameSpanMs.max).toBe(26);
    expect(p.frameSpanMs.p50).toBe(16);
    // Frames: 2, 2, 2 + 20, 2 ms wall; 1.5, 1.5, 19.5, 1.5 ms CPU.
    expect(p.workWallMs.max).toBe(22);
    expect(p.workWallMs.p50).toBe(2);
    expect(p.workCpuMs.max).toBe(19.5);
    expect(p.framesOverBudgetWall).toBe(1);
    expect(p.framesOverBudgetCpu).toBe(1);
    expect(p.longestTasks[0]).toMatchObject({ atMs: 34, wallMs: 20, cpuMs: 18 });
    expect(p.longestTasks[0]!.top[0]).toBe('FunctionCall 15');
  });

  it('reports self time per event name with nested events subtracted', () => {
    const p = profileFrames(trace(), { startMark: 'afd-bench-start', endMark: 'afd-bench-end' });
    const row = (n: string) => p.selfTime.find((s) => s.name === n);
    expect(row('FunctionCall')).toEqual({ name: 'FunctionCall', wallMs: 15, cpuMs: 14, count: 1 });
    expect(row('Paint')?.wallMs).toBe(3);
    // Five BeginMainFrame tasks of 2 ms minus 1 ms layout each, plus the fold's 20 - 15 - 3.
    expect(row('RunTask')?.wallMs).toBe(7);
    expect(row('Layout')).toMatchObject({ wallMs: 5, count: 5 });
    expect(p.busyWall).toBeCloseTo(30 / 80, 3);
  });

  it('cuts a long frame-less stretch at vsync ticks so separate updates are not summed', () => {
    const events: TraceEvent[] = [
      { name: 'thread_name', ph: 'M', pid: PID, tid: TID, ts: 0, args: { name: 'CrRendererMain' } },
      ...[0, 100].flatMap((t) => [x('RunTask', t, 1), instant('BeginMainThreadFrame', t + 0.1)]),
      x('RunTask', 10, 10, 10),
      x('RunTask', 60, 10, 10),
    ];
    const p = profileFrames(events, { vsyncMs: 10 });
    expect(p.frames).toBe(1);
    expect(p.frameSpanMs.max).toBe(100);
    expect(p.intervals).toBe(10);
    expect(p.workCpuMs.max).toBe(10);
  });

  it('finds the busiest renderer main thread without marks', () => {
    const events = trace().filter((e) => !e.name.startsWith('afd-bench'));
    const p = profileFrames(events);
    expect(p.tid).toBe(TID);
    expect(p.frames).toBe(4);
  });

  it('says what is missing from a trace it cannot profile', () => {
    expect(() => profileFrames([x('RunTask', 0, 1)])).toThrow(/CrRendererMain/);
    const noFrames = trace().filter((e) => e.name !== 'BeginMainThreadFrame');
    expect(() => profileFrames(noFrames, { startMark: 'afd-bench-start' })).toThrow(/BeginMainThreadFrame/);
  });
});

describe('percentiles', () => {
  it('uses the nearest rank', () => {
    const v = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentiles(v)).toEqual({ p50: 50, p95: 95, p99: 99, max: 100 });
    expect(percentiles([])).toEqual({ p50: 0, p95: 0, p99: 0, max: 0 });
  });
});
