/**
 * Snapshot feed of the dashboard benchmark, off the page's main thread (like the console
 * host that sends them in real runs): every rank reports at `hz` with its own phase, and
 * each snapshot is posted as the JSON text of one bridge push frame, exactly what the
 * WebSocket bridge receives. Start with a message {ranks, layers, stages, hz}; stop with 'stop'.
 */
import { SyntheticMetrics } from '../syntheticMetrics.js';

/** What the page sends to start the feed. */
export interface FeedStart {
  attentionRanks: number;
  ffnRanks: number;
  numLayers: number;
  numStages: number;
  /** Snapshots per second per rank. */
  hz: number;
  /** The launch id the pushes carry. */
  launchId: string;
}

let timer: ReturnType<typeof setInterval> | undefined;
/** The worker scope's postMessage (the DOM lib types `self` as a Window). */
const post = (text: string): void => (self as unknown as { postMessage(m: string): void }).postMessage(text);

self.onmessage = (ev: MessageEvent<FeedStart | 'stop'>) => {
  if (ev.data === 'stop') {
    clearInterval(timer);
    return;
  }
  const cfg = ev.data;
  const gen = new SyntheticMetrics(cfg);
  const ranks = cfg.attentionRanks + cfg.ffnRanks;
  let pending = gen.tick(Date.now());
  let next = 0;
  // One rank per slot: the ranks of a real topology are not in phase.
  timer = setInterval(() => {
    if (next === ranks) {
      pending = gen.tick(Date.now());
      next = 0;
    }
    const snapshot = { ...pending[next++]!, timestampMs: Date.now() };
    const frame = { kind: 'push', channel: 'metrics.snapshot', payload: { agentId: 'bench', launchId: cfg.launchId, snapshot } };
    post(JSON.stringify(frame));
  }, 1000 / (cfg.hz * ranks));
};
