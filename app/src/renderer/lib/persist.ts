/**
 * Browser storage for the stores that outlive a reload (chats, sampling and topology
 * settings), in localStorage: per origin, so per console host (browser mode) or per
 * desktop install (Electron keeps it in its profile). Writes are debounced (a streamed
 * reply changes the chat store at token rate) and flushed when the page goes away; a full
 * storage is reported instead of thrown; what is read back is validated by the store
 * (zod), so a stale or hand-edited value cannot break the console.
 */
import type { PersistStorage, StorageValue } from 'zustand/middleware';

/** The part of the Web Storage API used here (tests pass a Map-backed one). */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Key prefix of everything the console stores. */
export const STORAGE_PREFIX = 'afd.console.';

/** localStorage when this page may use it, else null (nothing is kept). */
export function browserStorage(): KeyValueStorage | null {
  try {
    const s = globalThis.localStorage;
    if (!s) return null;
    const probe = `${STORAGE_PREFIX}probe`;
    s.setItem(probe, '1');
    s.removeItem(probe);
    return s;
  } catch {
    return null;
  }
}

/** A Map-backed storage (tests, and pages without localStorage). */
export function memoryStorage(): KeyValueStorage & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return { data, getItem: (k) => data.get(k) ?? null, setItem: (k, v) => void data.set(k, v), removeItem: (k) => void data.delete(k) };
}

export interface DebouncedStorage<S> extends PersistStorage<S, void> {
  /** Writes what is pending now. */
  flush(): void;
}

export interface DebouncedStorageOptions<S> {
  /** Delay before a write, ms (default 500). */
  delayMs?: number;
  /** Called with a sentence when a write fails (storage full or disabled). */
  onError?: (message: string) => void;
  /** Turns the state into what is written, at write time (so a state changing at token rate costs one pass per write). */
  prepare?: (state: S) => S;
}

/** JSON storage over `base` whose writes wait `delayMs` and collapse into one. */
export function debouncedStorage<S>(base: KeyValueStorage, opts: DebouncedStorageOptions<S> = {}): DebouncedStorage<S> {
  const pending = new Map<string, StorageValue<S>>();
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = (): void => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    for (const [name, value] of pending) {
      try {
        base.setItem(name, JSON.stringify(opts.prepare ? { ...value, state: opts.prepare(value.state) } : value));
      } catch (e) {
        const why = e instanceof Error && /quota/i.test(`${e.name} ${e.message}`) ? 'the browser storage for this page is full' : `the browser refused to store it (${(e as Error).message})`;
        opts.onError?.(`could not save ${name.replace(STORAGE_PREFIX, '')}: ${why}; delete some old chats`);
      }
    }
    pending.clear();
  };
  globalThis.addEventListener?.('pagehide', flush);
  return {
    flush,
    getItem(name) {
      const waiting = pending.get(name);
      if (waiting) return waiting;
      const text = base.getItem(name);
      if (text === null) return null;
      try {
        return JSON.parse(text) as StorageValue<S>;
      } catch {
        return null; // unreadable: start fresh (the next write replaces it)
      }
    },
    setItem(name, value) {
      pending.set(name, value);
      timer ??= setTimeout(flush, opts.delayMs ?? 500);
    },
    removeItem(name) {
      pending.delete(name);
      base.removeItem(name);
    },
  };
}
