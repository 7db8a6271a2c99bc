/**
 * The Plan screen's state: the inputs, the loaded cost profile (or why a file was refused),
 * the last planner result for them, and the row last sent to the Topology screen. Every
 * change of inputs or profile runs the planner again (in a worker on the page); a result
 * that arrives after a newer run started is dropped. The inputs and the last profile loaded
 * are remembered across reloads (planPersistence.ts); a remembered profile is planned at once.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import { parseCostProfile, type AgentInfo, type CostProfile, type MemoryModel, type PlanProfilesResult, type PlanResult, type PlanRow } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';
import { defaultLink, draftFromRow, planJob, type PlanInputs } from '../plan/planLogic.js';
import { inlineRunner, type PlanRunner } from '../plan/planRunner.js';
import type { TopologyState } from './topologyStore.js';
import { browserStorage, type KeyValueStorage } from '../lib/persist.js';
import { loadPlanInputs, loadPlanProfile, savePlanInputs, savePlanProfile } from './planPersistence.js';

export interface LoadedProfile {
  /** Where it came from: a file name, or "agent: file name" for one an agent sent. */
  source: string;
  profile: CostProfile;
}

export interface PlanState {
  inputs: PlanInputs;
  profile: LoadedProfile | null;
  /** Why the last file was refused (the profile loaded before it stays). */
  profileError: string | null;
  result: PlanResult | null;
  /** The inputs `result` was planned for (the fields may have changed since). */
  resultInputs: PlanInputs | null;
  /** The memory model `result` was bounded by (null: capacity not modelled). */
  resultMemory: MemoryModel | null;
  /** An input problem or the planner's error. */
  error: string | null;
  running: boolean;
  /** The Topology screen's note for the draft last filled from a row (null: the draft is the user's own). */
  applied: { note: string; topology: string } | null;
  /** The profiles an agent has on its host (plan.profiles), or why they could not be listed. */
  agentProfiles: { agentId: string; state: 'listing' } | { agentId: string; state: 'done'; result: PlanProfilesResult } | { agentId: string; state: 'failed'; error: string } | null;
  /** Asks an agent for its profiles (needs the bridge). */
  listAgentProfiles(agentId: string): Promise<void>;
  setInputs(patch: Partial<PlanInputs>): void;
  /** Parses a profile's JSON text; a bad one sets profileError and keeps the current profile. */
  loadProfile(source: string, text: string): boolean;
  /** Runs the planner now for the current inputs and profile. */
  run(): Promise<void>;
  /** Fills the Topology draft with a row's shape (DBO on for micro-batches). */
  applyRow(row: PlanRow, topology: StoreApi<TopologyState>, agents: readonly AgentInfo[]): void;
}

export function createPlanStore(opts: { runner?: PlanRunner; bridge?: RendererBridge; /** Default: this page's localStorage; null keeps nothing. */ storage?: KeyValueStorage | null } = {}): StoreApi<PlanState> {
  const runner = opts.runner ?? inlineRunner;
  const storage = opts.storage === undefined ? browserStorage() : opts.storage;
  let seq = 0;
  const store = createStore<PlanState>()((set, get) => ({
    inputs: loadPlanInputs(storage),
    profile: loadPlanProfile(storage),
    profileError: null,
    result: null,
    resultInputs: null,
    resultMemory: null,
    error: null,
    running: false,
    applied: null,
    agentProfiles: null,
    async listAgentProfiles(agentId) {
      const bridge = opts.bridge;
      if (!bridge) return;
      set({ agentProfiles: { agentId, state: 'listing' } });
      try {
        const result = await bridge.invoke('plan.profiles', { agentId });
        if (get().agentProfiles?.agentId === agentId) set({ agentProfiles: { agentId, state: 'done', result } });
      } catch (e) {
        if (get().agentProfiles?.agentId === agentId) set({ agentProfiles: { agentId, state: 'failed', error: e instanceof Error ? e.message : String(e) } });
      }
    },
    setInputs(patch) {
      set((s) => ({ inputs: { ...s.inputs, ...patch } }));
      savePlanInputs(storage, get().inputs);
      void get().run();
    },
    loadProfile(source, text) {
      let profile: CostProfile;
      try {
        profile = parseCostProfile(text, source);
      } catch (e) {
        set({ profileError: e instanceof Error ? e.message : String(e) });
        return false;
      }
      set((s) => ({ profile: { source, profile }, profileError: null, inputs: { ...s.inputs, link: defaultLink(profile, s.inputs.link) } }));
      savePlanProfile(storage, source, text);
      savePlanInputs(storage, get().inputs);
      void get().run();
      return true;
    },
    async run() {
      const { profile, inputs } = get();
      const planned = { ...inputs };
      const id = ++seq;
      if (!profile) return;
      const checked = planJob(profile.profile, inputs);
      if (!checked.ok) {
        set({ error: checked.error, result: null, running: false });
        return;
      }
      set({ running: true, error: null });
      try {
        const result = await runner(checked.job);
        if (id === seq) set({ result, resultInputs: planned, resultMemory: checked.job.query.memory ?? null, running: false });
      } catch (e) {
        if (id === seq) set({ error: e instanceof Error ? e.message : String(e), result: null, running: false });
      }
    },
    applyRow(row, topology, agents) {
      const fill = draftFromRow(row);
      if (!fill) return;
      const t = topology.getState();
      if (fill.custom !== undefined) t.setCustom(fill.custom, agents);
      if (fill.replicas !== undefined) t.setReplicas(fill.replicas, agents);
      t.setChoice(fill.choice, agents);
      if (fill.dbo !== undefined) t.setConfig('afd', { dbo: { ...topology.getState().options.config.afd.dbo, enabled: fill.dbo } });
      if (fill.expertParallel !== undefined) t.setConfig('afd', { enableExpertParallel: fill.expertParallel });
      set({ applied: { note: fill.note, topology: fill.choice === 'colocated' ? `colocated:${fill.replicas}` : row.topology } });
    },
  }));
  if (store.getState().profile) void store.getState().run();
  return store;
}
