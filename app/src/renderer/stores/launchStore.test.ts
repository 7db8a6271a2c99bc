import { describe, expect, it } from 'vitest';
import type { LaunchProgress } from '@afd/shared';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { createLaunchStore } from './launchStore.js';

const progress: LaunchProgress = { launchId: 'L1', state: 'failed', ranks: [], routerUrl: null, message: 'ffn rank 0 on agent b exited with code 1: port in use', cleanup: { state: 'done', stopped: ['agent a: attention 0'], problems: [] }, model: null, modelId: null, apiKeyRequired: null, gpus: [] };

describe('launch store', () => {
  it('knows nothing until the service answered, then knows there is no launch', async () => {
    const bridge = createFakeBridge();
    bridge.handle('launch.get', () => ({ launch: null }));
    const store = createLaunchStore(bridge);
    expect(store.getState()).toMatchObject({ loaded: false, progress: null });
    await store.getState().refresh();
    expect(store.getState()).toMatchObject({ loaded: true, progress: null });
  });

  it('follows pushes, and keeps an action failure for the banner', async () => {
    const bridge = createFakeBridge();
    bridge.handle('topology.stop', () => {
      throw new Error('agent b: stop failed: connection closed');
    });
    const store = createLaunchStore(bridge);
    bridge.emit('launch.progress', progress);
    expect(store.getState()).toMatchObject({ loaded: true, progress: { state: 'failed', cleanup: { stopped: ['agent a: attention 0'] } } });
    await store.getState().stop();
    expect(store.getState()).toMatchObject({ busy: null, error: 'agent b: stop failed: connection closed' });
  });

  it('replace stops the running launch, then launches the new spec; a failed stop launches nothing', async () => {
    const bridge = createFakeBridge();
    const calls: string[] = [];
    let stopFails = false;
    bridge.handle('topology.stop', () => {
      calls.push('stop');
      if (stopFails) throw new Error('agent b: stop failed: connection closed');
      return { stopped: true };
    });
    bridge.handle('topology.launch', (spec) => {
      calls.push(`launch ${(spec as { topology: string }).topology}`);
      return { launchId: 'L2' };
    });
    const store = createLaunchStore(bridge);
    const spec = { mode: 'afd' as const, topology: '1A1F', placements: [] };
    expect(await store.getState().replace(spec)).toBe(true);
    expect(calls).toEqual(['stop', 'launch 1A1F']);
    expect(store.getState()).toMatchObject({ busy: null, error: null });
    stopFails = true;
    calls.length = 0;
    expect(await store.getState().replace(spec)).toBe(false);
    expect(calls).toEqual(['stop']);
    expect(store.getState()).toMatchObject({ busy: null, error: 'agent b: stop failed: connection closed' });
  });

  it('setRestartPolicy sends the change and keeps a refusal for the banner', async () => {
    const bridge = createFakeBridge();
    const sent: unknown[] = [];
    bridge.handle('topology.setRestartPolicy', (change) => {
      sent.push(change);
      if ((change as { maxRestarts?: number }).maxRestarts === 0) throw new Error('the restart policy did not change: agent b: the restart policy change failed: no launch L1 on this agent');
      return { restart: { policy: 'never', maxRestarts: 10, backoffMs: 1000, maxBackoffMs: 30_000 } };
    });
    const store = createLaunchStore(bridge);
    expect(await store.getState().setRestartPolicy({ policy: 'never' })).toBe(true);
    expect(store.getState()).toMatchObject({ busy: null, error: null });
    expect(await store.getState().setRestartPolicy({ maxRestarts: 0 })).toBe(false);
    expect(sent).toEqual([{ policy: 'never' }, { maxRestarts: 0 }]);
    expect(store.getState().error).toBe('the restart policy did not change: agent b: the restart policy change failed: no launch L1 on this agent');
  });
});
