/**
 * Returns `value`, but changes at most once per `ms` (the latest value wins, delivered
 * by a trailing timer). Charts use it to redraw at 4 Hz while numbers update at 10 Hz.
 */
import { useEffect, useRef, useState } from 'react';

export function useThrottled<T>(value: T, ms: number): T {
  const [shown, setShown] = useState(value);
  const last = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => {
    const now = performance.now();
    const wait = last.current + ms - now;
    if (wait <= 0) {
      last.current = now;
      setShown(value);
      return;
    }
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      last.current = performance.now();
      timer.current = null;
      setShown(value);
    }, wait);
  }, [value, ms]);
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  return shown;
}
