/**
 * A value shown at most every `intervalMs` while it is live (a streaming reply grows by a
 * token many times a second, and re-rendering its whole markdown on each one keeps the
 * page's main thread busy enough that clicks wait), and at once when it stops being live.
 * The newest value always shows within one interval: a pending update is never dropped.
 */
import { useEffect, useRef, useState } from 'react';

/** How often a streaming reply re-renders (ms). */
export const liveRenderIntervalMs = 100;

/** When the next render of a live value is due, given the last one (pure, for tests). */
export function nextRenderDelayMs(nowMs: number, lastRenderMs: number, intervalMs: number): number {
  return Math.max(0, lastRenderMs + intervalMs - nowMs);
}

export function useThrottledWhileLive<T>(value: T, live: boolean, intervalMs = liveRenderIntervalMs): T {
  const [shown, setShown] = useState(value);
  const lastRender = useRef(0);
  const latest = useRef(value);
  latest.current = value;
  useEffect(() => {
    if (!live) {
      lastRender.current = performance.now();
      setShown(value);
      return undefined;
    }
    const delay = nextRenderDelayMs(performance.now(), lastRender.current, intervalMs);
    const timer = setTimeout(() => {
      lastRender.current = performance.now();
      setShown(latest.current);
    }, delay);
    return () => clearTimeout(timer);
  }, [value, live, intervalMs]);
  return live ? shown : value;
}
