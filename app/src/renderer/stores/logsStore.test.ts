import { describe, expect, it, vi } from 'vitest';
import type { LogLine } from '@afd/shared';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { createLogsStore, lineMatches } from './logsStore.js';

const line = (t: number, text: string, level: LogLine['level'] = 'info'): LogLine => ({ timestampMs: t, stream: 'stderr', level, text });
const rank = { agentId: 'a', role: 'ffn' as const, rank: 0 };

describe('logsStore', () => {
  it('keeps a bounded ring per rank from pushes', () => {
    vi.useFakeTimers();
    const bridge = createFakeBridge();
    bridge.handle('logs.get', () => ({ lines: [] }));
    const store = createLogsStore(bridge, 5);
    bridge.emit('logs.lines', { ...rank, lines: Array.from({ length: 8 }, (_, i) => line(i, `l${i}`)) });
    expect(store.getState().ranks).toEqual([rank]);
    vi.advanceTimersByTime(250);
    expect(store.getState().version).toBe(1);
    vi.useRealTimers();
  });

  it('merges the fetched backlog with lines pushed meanwhile, and filters', async () => {
    const bridge = createFakeBridge();
    bridge.handle('logs.get', () => ({ lines: [line(1, 'loading weights'), line(2, 'peer lost', 'warn')] }));
    const store = createLogsStore(bridge, 100);
    bridge.emit('logs.lines', { ...rank, lines: [line(2, 'peer lost', 'warn'), line(3, 'ready')] });
    await store.getState().select(rank);
    expect(bridge.calls[0]!.request).toEqual({ agentId: 'a', role: 'ffn', rank: 0, tail: 100 });
    expect(store.getState().visibleLines().map((l) => l.text)).toEqual(['loading weights', 'peer lost', 'ready']);
    expect(store.getState().droppedLines()).toBe(0);
    store.getState().setFilter('PEER');
    expect(store.getState().visibleLines().map((l) => l.text)).toEqual(['peer lost']);
    store.getState().setFilter('');
    store.getState().setLevel('warn');
    expect(store.getState().visibleLines().map((l) => l.text)).toEqual(['peer lost']);
  });

  it('reports a failed backlog fetch', async () => {
    const bridge = createFakeBridge();
    bridge.handle('logs.get', () => {
      throw new Error('no agent "a" is connected');
    });
    const store = createLogsStore(bridge);
    await store.getState().select(rank);
    expect(store.getState().error).toMatch(/cannot load the logs of a\/ffn:0: no agent "a" is connected/);
  });

  it('lineMatches: non-pino lines only pass "all"', () => {
    expect(lineMatches(line(0, 'x', null), '', 'all')).toBe(true);
    expect(lineMatches(line(0, 'x', null), '', 'info')).toBe(false);
    expect(lineMatches(line(0, 'x', 'error'), '', 'warn')).toBe(true);
    expect(lineMatches(line(0, 'x', 'debug'), '', 'info')).toBe(false);
  });
});
