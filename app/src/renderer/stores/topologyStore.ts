/** The Topology screen's draft as a store; evaluation is derived in the view. */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { AgentInfo } from '@afd/shared';
import { autoAssign, defaultOptions, type Assignment, type Draft, type DraftOptions, type TopologyChoice } from './topologyDraft.js';

export interface TopologyState extends Draft {
  setChoice(choice: TopologyChoice, agents: readonly AgentInfo[]): void;
  setCustom(text: string, agents: readonly AgentInfo[]): void;
  setReplicas(n: number, agents: readonly AgentInfo[]): void;
  assign(key: string, a: Assignment): void;
  /** Fills unassigned ranks (force: re-spread all). */
  autoAssign(agents: readonly AgentInfo[], force?: boolean): void;
  setOptions(patch: Partial<DraftOptions>): void;
}

export function createTopologyStore(): StoreApi<TopologyState> {
  return createStore<TopologyState>()((set, get) => {
    const reassign = (agents: readonly AgentInfo[]): void => set({ assignments: autoAssign(get(), agents) });
    return {
      choice: '2A2F',
      custom: '3A2F',
      replicas: 1,
      assignments: {},
      options: { ...defaultOptions },
      setChoice(choice, agents) {
        set({ choice });
        reassign(agents);
      },
      setCustom(custom, agents) {
        set({ custom });
        reassign(agents);
      },
      setReplicas(replicas, agents) {
        set({ replicas });
        reassign(agents);
      },
      assign: (key, a) => set((s) => ({ assignments: { ...s.assignments, [key]: a } })),
      autoAssign: (agents, force = false) => set({ assignments: autoAssign(get(), agents, force) }),
      setOptions: (patch) => set((s) => ({ options: { ...s.options, ...patch } })),
    };
  });
}
