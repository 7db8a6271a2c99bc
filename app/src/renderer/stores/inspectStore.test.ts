import { describe, expect, it, vi } from 'vitest';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { createInspectStore, inspectKey } from './inspectStore.js';

const refused = (dir: string) => ({ dir, status: 'refused', reason: `${dir} does not exist on this host`, config: null, weights: { present: false, files: 0, bytes: 0 }, tokenizer: { present: false, chatTemplate: false }, roles: [] });

describe('inspect store', () => {
  it('asks once typing pauses, per agent, and keeps the answer', async () => {
    vi.useFakeTimers();
    try {
      const bridge = createFakeBridge();
      bridge.handle('model.inspect', (r) => {
        const { agentId, dir } = r as { agentId: string; dir: string };
        if (agentId === 'down') throw new Error('agent at ws://down:7700 is not connected');
        return refused(dir);
      });
      let now = 0;
      const store = createInspectStore(bridge, { debounceMs: 300, maxAgeMs: 10_000, now: () => now });
      store.getState().want(['a', 'down'], '/m');
      store.getState().want(['a', 'down'], '/mo');
      store.getState().want(['a', 'down'], '/models/x');
      await vi.advanceTimersByTimeAsync(299);
      expect(bridge.calls).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(bridge.calls.map((c) => c.request)).toEqual([
        { agentId: 'a', dir: '/models/x' },
        { agentId: 'down', dir: '/models/x' },
      ]);
      const s = store.getState().inspections;
      expect(s[inspectKey('a', '/models/x')]).toMatchObject({ state: 'done', result: { status: 'refused' } });
      expect(s[inspectKey('down', '/models/x')]).toMatchObject({ state: 'failed', error: 'agent at ws://down:7700 is not connected' });
      // Fresh answers are not asked again; stale ones are.
      store.getState().want(['a'], '/models/x');
      await vi.advanceTimersByTimeAsync(400);
      expect(bridge.calls).toHaveLength(2);
      now = 20_000;
      store.getState().want(['a'], '/models/x');
      await vi.advanceTimersByTimeAsync(400);
      expect(bridge.calls).toHaveLength(3);
      // A relative path is the draft's problem to name, not the agent's.
      store.getState().want(['a'], 'models/x');
      await vi.advanceTimersByTimeAsync(400);
      expect(bridge.calls).toHaveLength(3);
    } finally {
      vi.useRealTimers();
    }
  });
});
