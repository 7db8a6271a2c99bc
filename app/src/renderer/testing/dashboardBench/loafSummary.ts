/**
 * Summary of Long Animation Frame entries (`long-animation-frame`, Chromium 123+): frames
 * whose work took over 50 ms, with the scripts that ran in them. The DOM typings do not
 * carry this entry type yet, so the fields read are declared here.
 */

/** The fields of a PerformanceLongAnimationFrameTiming this summary reads. */
export interface LoafEntry {
  duration: number;
  /** Time beyond 50 ms of the longest task (what blocked input). */
  blockingDuration?: number;
  /** When rendering (rAF, style, layout) started; 0 when the frame did not render. */
  renderStart?: number;
  styleAndLayoutStart?: number;
  startTime: number;
  scripts?: readonly LoafScript[];
}

export interface LoafScript {
  duration: number;
  invoker?: string;
  invokerType?: string;
  sourceFunctionName?: string;
  sourceURL?: string;
  forcedStyleAndLayoutDuration?: number;
}

export interface LoafSummary {
  count: number;
  maxDurationMs: number;
  maxBlockingMs: number;
  /** Time spent in style and layout of the longest frame, ms. */
  maxStyleAndLayoutMs: number;
  /** Scripts by total time in long frames, longest first (at most 8). */
  topScripts: { script: string; totalMs: number; count: number; forcedLayoutMs: number }[];
}

/** Folds LoAF entries into counts, maxima and the scripts that took the time. */
export function summarizeLoafs(entries: readonly PerformanceEntry[]): LoafSummary {
  const list = entries as unknown as readonly LoafEntry[];
  const scripts = new Map<string, { totalMs: number; count: number; forcedLayoutMs: number }>();
  let maxDurationMs = 0;
  let maxBlockingMs = 0;
  let maxStyleAndLayoutMs = 0;
  for (const e of list) {
    if (e.duration > maxDurationMs) {
      maxDurationMs = e.duration;
      maxStyleAndLayoutMs = e.styleAndLayoutStart ? Math.max(0, e.startTime + e.duration - e.styleAndLayoutStart) : 0;
    }
    maxBlockingMs = Math.max(maxBlockingMs, e.blockingDuration ?? 0);
    for (const s of e.scripts ?? []) {
      const file = (s.sourceURL ?? '').split('/').pop() ?? '';
      const key = `${s.invokerType ?? '?'} ${s.invoker ?? '?'} -> ${s.sourceFunctionName || '(anonymous)'}${file ? ` @${file}` : ''}`;
      const acc = scripts.get(key) ?? { totalMs: 0, count: 0, forcedLayoutMs: 0 };
      acc.totalMs += s.duration;
      acc.count += 1;
      acc.forcedLayoutMs += s.forcedStyleAndLayoutDuration ?? 0;
      scripts.set(key, acc);
    }
  }
  const topScripts = [...scripts.entries()]
    .map(([script, v]) => ({ script, ...v }))
    .sort((a, b) => b.totalMs - a.totalMs)
    .slice(0, 8);
  return { count: list.length, maxDurationMs, maxBlockingMs, maxStyleAndLayoutMs, topScripts };
}
