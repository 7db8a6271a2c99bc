/** What screens say about a launch: its name, why the Playground cannot chat (and Send is off), why the Dashboard's numbers are not live. */
import { countOf, type LaunchProgress } from '@afd/shared';

/** What a launch runs, e.g. "2A2F", "1P1A1F" or "2 colocated replicas". */
export function launchName(p: Pick<LaunchProgress, 'ranks'>): string {
  if (p.ranks.some((r) => r.role === 'colocated')) return countOf(p.ranks.length, 'colocated replica');
  const n = (role: string): number => p.ranks.filter((r) => r.role === role).length;
  return `${n('prefill') > 0 ? `${n('prefill')}P` : ''}${n('attention')}A${n('ffn')}F`;
}

/** Why the Playground cannot chat now, in a sentence; null when it can (or when it cannot know). */
export function notReadyText(progress: LaunchProgress | null, loaded: boolean): string | null {
  if (!loaded) return null;
  if (!progress) return 'No topology is running. Launch one to chat with it.';
  switch (progress.state) {
    case 'running':
      return null;
    case 'launching':
      return 'The topology is launching: wait until every rank is ready.';
    case 'failed':
      return `The topology failed${progress.message ? `: ${progress.message}` : '.'}`;
    case 'stopping':
      return 'The topology is stopping.';
    case 'stopped':
      return 'The topology is stopped. Launch it again to chat.';
  }
}

/**
 * Why Send is off, in a few words beside it; null when a reply can be asked for. A page
 * whose link is down cannot reach the topology whatever runs; a page that has not heard
 * about launches yet does not block (the service answers then).
 */
export function sendBlockedReason(progress: LaunchProgress | null, loaded: boolean, linkOpen: boolean): string | null {
  if (!linkOpen) return 'not connected to the console host';
  if (!loaded) return null;
  if (!progress) return 'no topology is running';
  switch (progress.state) {
    case 'running':
      return null;
    case 'launching':
      return 'the topology is still launching';
    case 'failed':
      return 'the topology failed';
    case 'stopping':
      return 'the topology is stopping';
    case 'stopped':
      return 'the topology is stopped';
  }
}

/** After this long without a snapshot of a running topology, the numbers are stale. */
export const STALE_AFTER_MS = 3000;

/** Why the numbers on screen are not live, or null when they are. */
export function frozenReason(progress: LaunchProgress | null, metricsLaunchId: string | null, lastDataAtMs: number | null, nowMs: number): string | null {
  const at = lastDataAtMs !== null ? new Date(lastDataAtMs).toLocaleTimeString() : '?';
  if (!progress || progress.launchId !== metricsLaunchId) return `These are the last metrics of an earlier launch (received at ${at}).`;
  if (progress.state !== 'running') return `The topology is ${progress.state}: these are its last metrics (received at ${at}).`;
  if (lastDataAtMs !== null && nowMs - lastDataAtMs > STALE_AFTER_MS) return `No metrics for ${Math.round((nowMs - lastDataAtMs) / 1000)} s: these are the last ones (received at ${at}). Is an agent lost? See the Agents screen.`;
  return null;
}

/** What the restart policy did, e.g. "Restarts: 1 · last cause: ffn rank 0 on agent a was killed by SIGKILL"; null before any. */
export function recoveryText(p: Pick<LaunchProgress, 'recovery'>): string | null {
  if (!p.recovery) return null;
  const { restarts, lastCause } = p.recovery;
  return `Restarts: ${restarts}${lastCause ? ` · last cause: ${lastCause}` : ''}`;
}
