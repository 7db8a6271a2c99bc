/**
 * Rank logs: a bounded ring per rank (pushed lines plus the backlog fetched when a rank
 * is opened), the selected rank and the filter. Views read through `visibleLines`.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { LogLine, ProcessRole } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';
import { RingBuffer } from '../../common/RingBuffer.js';

/** Lines kept per rank. */
export const LOG_LINES_PER_RANK = 2000;

export interface RankKey {
  agentId: string;
  role: ProcessRole;
  rank: number;
}

export const rankKeyString = (k: RankKey): string => `${k.agentId}/${k.role}:${k.rank}`;

export type LevelFilter = 'all' | 'info' | 'warn' | 'error';

export interface LogsState {
  /** Every rank seen, in first-seen order. */
  ranks: RankKey[];
  selected: string | null;
  filter: string;
  level: LevelFilter;
  /** Bumped whenever lines arrive (views select it). */
  version: number;
  error: string | null;
  select(key: RankKey): Promise<void>;
  setFilter(text: string): void;
  setLevel(level: LevelFilter): void;
  /** The selected rank's lines that pass the filter, oldest first. */
  visibleLines(): LogLine[];
  /** Lines dropped from the selected rank's ring. */
  droppedLines(): number;
}

const LEVEL_RANK: Record<string, number> = { trace: 0, debug: 1, info: 2, warn: 3, error: 4, fatal: 5 };
const MIN_LEVEL: Record<LevelFilter, number> = { all: -1, info: 2, warn: 3, error: 4 };

export function lineMatches(line: LogLine, filter: string, level: LevelFilter): boolean {
  if (level !== 'all' && (line.level === null || (LEVEL_RANK[line.level] ?? 0) < MIN_LEVEL[level])) return false;
  if (filter === '') return true;
  return line.text.toLowerCase().includes(filter.toLowerCase());
}

export function createLogsStore(bridge: RendererBridge | null, capacity = LOG_LINES_PER_RANK): StoreApi<LogsState> {
  const rings = new Map<string, RingBuffer<LogLine>>();
  let pendingBump = false;
  const ring = (key: string): RingBuffer<LogLine> => {
    let r = rings.get(key);
    if (!r) rings.set(key, (r = new RingBuffer<LogLine>(capacity)));
    return r;
  };

  const store = createStore<LogsState>()((set, get) => ({
    ranks: [],
    selected: null,
    filter: '',
    level: 'all',
    version: 0,
    error: null,
    async select(key) {
      const k = rankKeyString(key);
      set({ selected: k, error: null });
      if (!bridge) return;
      try {
        const { lines } = await bridge.invoke('logs.get', { agentId: key.agentId, role: key.role, rank: key.rank, tail: capacity });
        const r = ring(k);
        // The backlog is authoritative up to its newest line; keep pushed lines after it.
        const newest = lines[lines.length - 1]?.timestampMs ?? 0;
        const later = r.toArray().filter((l) => l.timestampMs > newest);
        r.clear();
        r.pushAll(lines);
        r.pushAll(later);
        set({ version: get().version + 1 });
      } catch (e) {
        set({ error: `cannot load the logs of ${k}: ${(e as Error).message}` });
      }
    },
    setFilter: (filter) => set({ filter }),
    setLevel: (level) => set({ level }),
    visibleLines() {
      const { selected, filter, level } = get();
      if (!selected) return [];
      return (rings.get(selected)?.toArray() ?? []).filter((l) => lineMatches(l, filter, level));
    },
    droppedLines() {
      const { selected } = get();
      return selected ? (rings.get(selected)?.dropped ?? 0) : 0;
    },
  }));

  /** Adds pushed lines (exported through the store for tests via the bridge). */
  const add = (key: RankKey, lines: LogLine[]): void => {
    const k = rankKeyString(key);
    const isNew = !rings.has(k);
    ring(k).pushAll(lines);
    if (isNew) store.setState((s) => ({ ranks: [...s.ranks, key] }));
    if (!pendingBump) {
      pendingBump = true;
      // Many ranks logging at once cause one re-render per 200 ms, not one per line.
      setTimeout(() => {
        pendingBump = false;
        store.setState((s) => ({ version: s.version + 1 }));
      }, 200);
    }
  };
  bridge?.on('logs.lines', (p) => add({ agentId: p.agentId, role: p.role, rank: p.rank }, p.lines));
  return store;
}
