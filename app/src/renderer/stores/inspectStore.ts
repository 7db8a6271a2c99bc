/**
 * Model directories as the agents see them (model.inspect), asked while the user types
 * the path: a request waits until typing pauses, answers are kept per agent and
 * directory for a while, and only the answer to the latest path is shown.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { ModelInspectResult } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';

export type Inspection = { state: 'checking' } | { state: 'done'; result: ModelInspectResult } | { state: 'failed'; error: string };

export interface InspectState {
  /** Keyed by inspectKey(agentId, dir). */
  inspections: Record<string, Inspection & { atMs: number }>;
  /** Asks every agent in `agentIds` about `dir` (after the typing pause; again once an answer is older than maxAgeMs). */
  want(agentIds: readonly string[], dir: string): void;
}

export const inspectKey = (agentId: string, dir: string): string => `${agentId}|${dir}`;

export interface InspectStoreOptions {
  /** Typing pause before asking, ms (default 300). */
  debounceMs?: number;
  /** Answers older than this are asked again, ms (default 15000). */
  maxAgeMs?: number;
  now?: () => number;
}

export function createInspectStore(bridge: RendererBridge, opts: InspectStoreOptions = {}): StoreApi<InspectState> {
  const now = opts.now ?? (() => Date.now());
  let timer: ReturnType<typeof setTimeout> | null = null;
  const store = createStore<InspectState>()((set, get) => {
    const put = (key: string, i: Inspection): void => set((s) => ({ inspections: { ...s.inspections, [key]: { ...i, atMs: now() } } }));
    const ask = async (agentId: string, dir: string): Promise<void> => {
      const key = inspectKey(agentId, dir);
      put(key, { state: 'checking' });
      try {
        put(key, { state: 'done', result: await bridge.invoke('model.inspect', { agentId, dir }) });
      } catch (e) {
        put(key, { state: 'failed', error: (e as Error).message });
      }
    };
    return {
      inspections: {},
      want(agentIds, dir) {
        if (!dir.startsWith('/')) return; // the draft says what is wrong with a relative path
        const stale = agentIds.filter((id) => {
          const i = get().inspections[inspectKey(id, dir)];
          return !i || (i.state !== 'checking' && now() - i.atMs > (opts.maxAgeMs ?? 15_000));
        });
        if (stale.length === 0) return;
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => {
          timer = null;
          for (const id of stale) void ask(id, dir);
        }, opts.debounceMs ?? 300);
      },
    };
  });
  return store;
}
