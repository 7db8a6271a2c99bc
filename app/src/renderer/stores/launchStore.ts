/** The current launch: progress pushed by the service, and launch/stop/restart/replace actions. */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { BridgeRequest, LaunchProgress, LaunchSpecInput } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';

type ActionName = 'launch' | 'stop' | 'restart' | 'replace' | 'restartPolicy';

export interface LaunchState {
  progress: LaunchProgress | null;
  /** The service has told this page about the launch (or that there is none): until then nothing is known. */
  loaded: boolean;
  /** The last action failure (launch refused, stop failed...). */
  error: string | null;
  /** An action in flight: its name. */
  busy: ActionName | null;
  launch(spec: LaunchSpecInput): Promise<boolean>;
  /** Stops the running launch, then launches `spec` (one click on the Topology screen); false when either failed (see error). */
  replace(spec: LaunchSpecInput): Promise<boolean>;
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Changes the running launch's restart policy on every agent of it (the Launch screen's switch); false when refused (see error). */
  setRestartPolicy(change: BridgeRequest<'topology.setRestartPolicy'>): Promise<boolean>;
  refresh(): Promise<void>;
  clearError(): void;
}

export function createLaunchStore(bridge: RendererBridge): StoreApi<LaunchState> {
  const store = createStore<LaunchState>()((set) => {
    const act = async (name: ActionName, fn: () => Promise<unknown>): Promise<boolean> => {
      set({ busy: name, error: null });
      try {
        await fn();
        set({ busy: null });
        return true;
      } catch (e) {
        set({ busy: null, error: (e as Error).message });
        return false;
      }
    };
    return {
      progress: null,
      loaded: false,
      error: null,
      busy: null,
      launch: (spec) => act('launch', () => bridge.invoke('topology.launch', spec)),
      replace: (spec) =>
        act('replace', async () => {
          await bridge.invoke('topology.stop', {});
          await bridge.invoke('topology.launch', spec);
        }),
      stop: async () => {
        await act('stop', () => bridge.invoke('topology.stop', {}));
      },
      restart: async () => {
        await act('restart', () => bridge.invoke('topology.restart', {}));
      },
      setRestartPolicy: (change) => act('restartPolicy', () => bridge.invoke('topology.setRestartPolicy', change)),
      async refresh() {
        try {
          const { launch } = await bridge.invoke('launch.get', {});
          set({ progress: launch, loaded: true });
        } catch (e) {
          set({ error: (e as Error).message });
        }
      },
      clearError: () => set({ error: null }),
    };
  });
  bridge.on('launch.progress', (p) => store.setState({ progress: p, loaded: true }));
  return store;
}
