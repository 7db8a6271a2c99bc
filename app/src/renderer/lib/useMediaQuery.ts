/** Whether a CSS media query matches now, re-rendering when it changes (window resized). */
import { useCallback, useSyncExternalStore } from 'react';

export function useMediaQuery(query: string): boolean {
  const subscribe = useCallback(
    (onChange: () => void) => {
      const list = globalThis.matchMedia?.(query);
      list?.addEventListener('change', onChange);
      return () => list?.removeEventListener('change', onChange);
    },
    [query],
  );
  // Where there is no matchMedia (tests rendering to a string), the query counts as matching.
  return useSyncExternalStore(subscribe, () => globalThis.matchMedia?.(query).matches ?? true);
}
