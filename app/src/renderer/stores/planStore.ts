/**
 * The Plan screen's state: the inputs, the loaded cost profile (or why a file was refused),
 * the last planner result for them, and the row last sent to the Topology screen. Every
 * change of inputs or profile runs the planner again (in a worker on the page); a result
 * that arrives after a newer run started is dropped. The inputs and the last profile loaded
 * are remembered across reloads (planPersistence.ts); a remembered profile is planned at once.
 * With more than one card kind in the mixed cluster's rows, the planner searches that
 * cluster (heteroSearch, as `afd-agent plan --gpus h200:8,h100:16`) instead of N GPUs of
 * the profile; its result is kept apart (mixedResult), as its rows are another shape.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import { parseCostProfile, type AgentInfo, type CostProfile, type HeteroRow, type MemoryModel, type PlanProfilesResult, type PlanResult, type PlanRow } from '@afd/shared';
import type { RendererBridge } from '../bridge/types.js';
import { defaultLink, draftFromRow, planJob, type DraftFill, type PlanInputs } from '../plan/planLogic.js';
import { draftFromMixedRow } from '../plan/mixedDraft.js';
import { isMixed, mixedJob, type MixedInputs, type MixedResult } from '../plan/mixedLogic.js';
import { inlineRunner, type PlanRunner } from '../plan/planRunner.js';
import type { PlanRequest } from '../plan/planRequest.js';
import type { TopologyState } from './topologyStore.js';
import { browserStorage, type KeyValueStorage } from '../lib/persist.js';
import { loadPlanInputs, loadPlanMixed, loadPlanProfile, savePlanInputs, savePlanMixed, savePlanProfile } from './planPersistence.js';

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
  /** The mixed cluster's card kinds and model (planned when more than one kind is given). */
  mixed: MixedInputs;
  /** The last mixed cluster's ranking (null while a single-profile plan is shown). */
  mixedResult: MixedResult | null;
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
  setMixed(patch: Partial<MixedInputs>): void;
  /** Parses a profile's JSON text; a bad one sets profileError and keeps the current profile. */
  loadProfile(source: string, text: string): boolean;
  /** Runs the planner now for the current inputs and profile. */
  run(): Promise<void>;
  /** Fills the Topology draft with a row's shape (DBO on for micro-batches). */
  applyRow(row: PlanRow, topology: StoreApi<TopologyState>, agents: readonly AgentInfo[]): void;
  /** The same for a mixed cluster's candidate (nothing for one that is not launchable). */
  applyMixedRow(row: HeteroRow, topology: StoreApi<TopologyState>, agents: readonly AgentInfo[]): void;
}

/** Writes a draft fill into the Topology store; the note's topology text for `applied`. */
function fillTopology(fill: DraftFill, topology: StoreApi<TopologyState>, agents: readonly AgentInfo[]): void {
  const t = topology.getState();
  if (fill.custom !== undefined) t.setCustom(fill.custom, agents);
  if (fill.replicas !== undefined) t.setReplicas(fill.replicas, agents);
  t.setChoice(fill.choice, agents);
  if (fill.dbo !== undefined) t.setConfig('afd', { dbo: { ...topology.getState().options.config.afd.dbo, enabled: fill.dbo } });
  if (fill.expertParallel !== undefined) t.setConfig('afd', { enableExpertParallel: fill.expertParallel });
}

export function createPlanStore(opts: { runner?: PlanRunner; bridge?: RendererBridge; /** Default: this page's localStorage; null keeps nothing. */ storage?: KeyValueStorage | null } = {}): StoreApi<PlanState> {
  const runner = opts.runner ?? inlineRunner;
  const storage = opts.storage === undefined ? browserStorage() : opts.storage;
  let seq = 0;
  const store = createStore<PlanState>()((set, get) => ({
    inputs: loadPlanInputs(storage),
    profile: loadPlanProfile(storage),
    profileError: null,
    mixed: loadPlanMixed(storage),
    mixedResult: null,
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
    setMixed(patch) {
      set((s) => ({ mixed: { ...s.mixed, ...patch } }));
      savePlanMixed(storage, get().mixed);
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
      const { profile, inputs, mixed } = get();
      const planned = { ...inputs };
      const id = ++seq;
      let req: PlanRequest;
      if (isMixed(mixed)) {
        const checked = mixedJob(mixed, inputs, profile);
        if (!checked.ok) return void set({ error: checked.error, result: null, mixedResult: null, running: false });
        req = { kind: 'mixed', job: checked.job };
      } else {
        // One kind or none: N GPUs of the loaded profile (nothing to plan without one).
        if (!profile) return void set({ error: null, result: null, mixedResult: null, running: false });
        const checked = planJob(profile.profile, inputs);
        if (!checked.ok) return void set({ error: checked.error, result: null, mixedResult: null, running: false });
        req = { kind: 'single', job: checked.job };
      }
      set({ running: true, error: null });
      try {
        const outcome = await runner(req);
        if (id !== seq) return;
        if (outcome.kind === 'mixed') set({ mixedResult: outcome.result, result: null, running: false });
        else set({ result: outcome.result, resultInputs: planned, resultMemory: req.kind === 'single' ? (req.job.query.memory ?? null) : null, mixedResult: null, running: false });
      } catch (e) {
        if (id === seq) set({ error: e instanceof Error ? e.message : String(e), result: null, mixedResult: null, running: false });
      }
    },
    applyRow(row, topology, agents) {
      const fill = draftFromRow(row);
      if (!fill) return;
      fillTopology(fill, topology, agents);
      set({ applied: { note: fill.note, topology: fill.choice === 'colocated' ? `colocated:${fill.replicas}` : row.topology } });
    },
    applyMixedRow(row, topology, agents) {
      const fill = draftFromMixedRow(row);
      if (!fill) return;
      fillTopology(fill, topology, agents);
      set({ applied: { note: fill.note, topology: fill.choice === 'colocated' ? `colocated:${fill.replicas}` : row.topology } });
    },
  }));
  if (store.getState().profile || isMixed(store.getState().mixed)) void store.getState().run();
  return store;
}
