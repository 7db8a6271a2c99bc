/** What the dashboard benchmark page (DashboardBench.tsx) leaves in window.__afdBench. */
import type { LoafSummary } from './loafSummary.js';

export interface BenchResult {
  durationMs: number;
  frames: number;
  /** Gaps between animation frames, ms (wall clock: includes time other processes took the CPU). */
  frameP50Ms: number;
  frameP95Ms: number;
  frameP99Ms: number;
  frameMaxMs: number;
  /** Frame gaps over 25 ms: at 60 Hz, a missed vsync (16.7 ms gaps plus timer jitter are on time). */
  missedFrames: number;
  /** Long tasks (> 50 ms) reported by the browser; -1 when the entry type is unsupported. */
  longTasks: number;
  longTaskMaxMs: number;
  /** Long animation frames (> 50 ms, `long-animation-frame`); null when unsupported. */
  loaf: LoafSummary | null;
  /** Snapshots that reached the store through the bridge. */
  snapshots: number;
  /** Time from the store fold to the committed DOM, per commit, ms. */
  commitP50Ms: number;
  commitP95Ms: number;
  commitMaxMs: number;
  commits: number;
}
