/**
 * The front routers' request log on this page: the newest REQUEST_LOG_CAPACITY requests
 * of every agent (loaded when the Server screen first opens, then pushed as they end), and
 * the one opened with its bodies (fetched from its agent on demand).
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import { REQUEST_LOG_CAPACITY, type LoggedRequest, type RequestDetail, type RequestSummary } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';

export const requestKey = (r: { agentId: string; id: number }): string => `${r.agentId}/${r.id}`;

export interface RequestsState {
  /** Oldest first (by arrival), at most REQUEST_LOG_CAPACITY. */
  rows: LoggedRequest[];
  /** The service has answered requests.list once. */
  loaded: boolean;
  error: string | null;
  /** requestKey of the opened request; null when none. */
  opened: string | null;
  /** Its bodies once fetched. */
  detail: RequestDetail | null;
  detailError: string | null;
  /** Loads the whole log (first view, link back). */
  load(): Promise<void>;
  /** Opens a request: fetches its bodies. Opening the open one closes it. */
  open(row: { agentId: string; id: number }): Promise<void>;
  close(): void;
}

/** Rows with `next` merged in: one per key (the newer copy wins), oldest first, bounded. */
export function mergeRows(rows: readonly LoggedRequest[], next: readonly LoggedRequest[], replaceAgent?: string): LoggedRequest[] {
  const byKey = new Map<string, LoggedRequest>();
  for (const r of rows) if (r.agentId !== replaceAgent) byKey.set(requestKey(r), r);
  for (const r of next) byKey.set(requestKey(r), r);
  const all = [...byKey.values()].sort((a, b) => a.startedAtMs - b.startedAtMs || a.id - b.id);
  return all.length > REQUEST_LOG_CAPACITY ? all.slice(-REQUEST_LOG_CAPACITY) : all;
}

export function createRequestsStore(bridge: RendererBridge): StoreApi<RequestsState> {
  const store = createStore<RequestsState>()((set, get) => ({
    rows: [],
    loaded: false,
    error: null,
    opened: null,
    detail: null,
    detailError: null,
    async load() {
      try {
        const { requests } = await bridge.invoke('requests.list', {});
        // The list is the service's whole log: rows pushed meanwhile are in it or newer.
        const agents = new Set(requests.map((r) => r.agentId));
        set((s) => ({ rows: mergeRows(s.rows.filter((r) => !agents.has(r.agentId)), requests), loaded: true, error: null }));
      } catch (e) {
        set({ error: `cannot load the request log: ${(e as Error).message}` });
      }
    },
    async open(row) {
      const key = requestKey(row);
      if (get().opened === key) return get().close();
      set({ opened: key, detail: null, detailError: null });
      try {
        const detail = await bridge.invoke('requests.get', { agentId: row.agentId, id: row.id });
        if (get().opened === key) set({ detail });
      } catch (e) {
        if (get().opened === key) set({ detailError: `cannot load request ${row.id} of agent ${row.agentId}: ${(e as Error).message}` });
      }
    },
    close: () => set({ opened: null, detail: null, detailError: null }),
  }));
  bridge.on('requests.logged', (p) => {
    const next = p.requests.map((r: RequestSummary) => ({ ...r, agentId: p.agentId }));
    store.setState((s) => ({ rows: mergeRows(s.rows, next, p.replace ? p.agentId : undefined) }));
  });
  return store;
}
