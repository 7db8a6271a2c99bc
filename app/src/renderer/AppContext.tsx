/** Creates every store from the bridge once and hands them to the screens. */
import { createContext, useContext, type ReactNode } from 'react';
import { useStore } from 'zustand';
import { useShallow } from 'zustand/react/shallow';
import type { StoreApi } from 'zustand/vanilla';
import type { RendererBridge } from './bridge/types.js';
import { createAgentsStore, type AgentsState } from './stores/agentsStore.js';
import { createChatStore, type ChatState } from './stores/chatStore.js';
import { createLaunchStore, type LaunchState } from './stores/launchStore.js';
import { createLogsStore, type LogsState } from './stores/logsStore.js';
import { createMetricsStore, type MetricsState } from './stores/metricsStore.js';
import { createTopologyStore, type TopologyState } from './stores/topologyStore.js';
import { createLinkStore, type LinkState } from './stores/linkStore.js';
import { createInspectStore, type InspectState } from './stores/inspectStore.js';
import { createPlanStore, type PlanState } from './stores/planStore.js';
import { workerRunner } from './plan/planRunner.js';
import { createRequestsStore, type RequestsState } from './stores/requestsStore.js';
import { browserStorage, type KeyValueStorage } from './lib/persist.js';

export interface Stores {
  bridge: RendererBridge;
  agents: StoreApi<AgentsState>;
  launch: StoreApi<LaunchState>;
  topology: StoreApi<TopologyState>;
  chat: StoreApi<ChatState>;
  metrics: StoreApi<MetricsState>;
  logs: StoreApi<LogsState>;
  link: StoreApi<LinkState>;
  inspect: StoreApi<InspectState>;
  requests: StoreApi<RequestsState>;
  plan: StoreApi<PlanState>;
}

/** Every store over `bridge`; chats and the topology draft are kept in `storage` (default: this page's localStorage). */
export function createStores(bridge: RendererBridge, storage: KeyValueStorage | null = browserStorage()): Stores {
  const refresh = (): void => {
    void stores.agents.getState().refresh();
    void stores.launch.getState().refresh();
    // The request log only once a Server screen has shown it.
    if (stores.requests.getState().loaded) void stores.requests.getState().load();
  };
  const stores: Stores = {
    bridge,
    agents: createAgentsStore(bridge),
    launch: createLaunchStore(bridge),
    topology: createTopologyStore({ storage }),
    chat: createChatStore(bridge, { storage }),
    metrics: createMetricsStore(bridge),
    logs: createLogsStore(bridge),
    link: createLinkStore(bridge, refresh),
    inspect: createInspectStore(bridge),
    requests: createRequestsStore(bridge),
    plan: createPlanStore({ runner: workerRunner(), bridge, storage }),
  };
  refresh();
  return stores;
}

const Ctx = createContext<Stores | null>(null);

export function StoresProvider({ stores, children }: { stores: Stores; children: ReactNode }) {
  return <Ctx.Provider value={stores}>{children}</Ctx.Provider>;
}

export function useStores(): Stores {
  const s = useContext(Ctx);
  if (!s) throw new Error('useStores outside StoresProvider');
  return s;
}

export const useAgents = <T,>(sel: (s: AgentsState) => T): T => useStore(useStores().agents, sel);
export const useLaunch = <T,>(sel: (s: LaunchState) => T): T => useStore(useStores().launch, sel);
export const useTopology = <T,>(sel: (s: TopologyState) => T): T => useStore(useStores().topology, sel);
export const useChat = <T,>(sel: (s: ChatState) => T): T => useStore(useStores().chat, sel);
export const useMetrics = <T,>(sel: (s: MetricsState) => T): T => useStore(useStores().metrics, sel);
export const useLogs = <T,>(sel: (s: LogsState) => T): T => useStore(useStores().logs, sel);
export const useLink = <T,>(sel: (s: LinkState) => T): T => useStore(useStores().link, sel);
export const useInspect = <T,>(sel: (s: InspectState) => T): T => useStore(useStores().inspect, sel);
export const useRequests = <T,>(sel: (s: RequestsState) => T): T => useStore(useStores().requests, sel);
export const usePlan = <T,>(sel: (s: PlanState) => T): T => useStore(useStores().plan, sel);

/**
 * Several fields of one store in one subscription: `useFields(useAgents, 'agents', 'error')`.
 * Shallow-compared, so the component re-renders when any of them changes, as it would with
 * one selector per field.
 */
export function useFields<S, K extends keyof S>(useSlice: <T>(sel: (s: S) => T) => T, ...keys: K[]): Pick<S, K> {
  return useSlice(useShallow((s: S) => Object.fromEntries(keys.map((k) => [k, s[k]])) as Pick<S, K>));
}
