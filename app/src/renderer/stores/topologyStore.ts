/**
 * The Topology screen's draft as a store, kept in browser storage (shape, custom text,
 * replicas, rank placements and every launch option): a reload shows the same draft.
 * Stored values are validated per field (the config sections by their shared schemas);
 * one that does not parse keeps the default.
 * Evaluation is derived in the view.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import { persist } from 'zustand/middleware';
import { z } from 'zod';
import type { AgentInfo } from '@afd/shared';
import { debouncedStorage, STORAGE_PREFIX, type KeyValueStorage } from '../lib/persist.js';
import { autoAssign, defaultOptions, draftConfigSchemas, MAX_PREFILL_RANKS, PRESETS, shapeOf, type Assignment, type Draft, type DraftConfig, type DraftOptions, type ShapeChoice } from './topologyDraft.js';
import { finiteOr, restoreSection } from './restoreSection.js';

export interface TopologyState extends Draft {
  prefill: number;
  /** Picks a Shape radio: a preset sets the whole shape (prefill ranks included: 0 unless a wPxAyF preset). */
  setChoice(choice: ShapeChoice, agents: readonly AgentInfo[]): void;
  /** Sets the prefill ranks beside the AFD ranks (NaN while typed). */
  setPrefill(n: number, agents: readonly AgentInfo[]): void;
  setCustom(text: string, agents: readonly AgentInfo[]): void;
  setReplicas(n: number, agents: readonly AgentInfo[]): void;
  assign(key: string, a: Assignment): void;
  /** Fills unassigned ranks (force: re-spread all). */
  autoAssign(agents: readonly AgentInfo[], force?: boolean): void;
  setOptions(patch: Partial<Omit<DraftOptions, 'config'>>): void;
  /** Sets fields of one config section (the rest of the section stays). */
  setConfig<S extends keyof DraftConfig>(section: S, patch: Partial<DraftConfig[S]>): void;
}

/** Storage key of the draft (v2: the launch options as config sections; a v2 draft stored before prefill ranks loads with none). */
export const TOPOLOGY_KEY = `${STORAGE_PREFIX}topology.v2`;

const assignmentSchema = z.object({ agentId: z.string().min(1), backend: z.enum(['cpu', 'cuda']), deviceIndex: z.int().min(0) });

/** A stored draft read back over `current`, field by field (the config sections through their shared schemas); one stored before prefill ranks has none. */
export function restoreDraft(stored: unknown, current: Draft): Draft & { prefill: number } {
  const o = (typeof stored === 'object' && stored !== null ? stored : {}) as Record<string, unknown>;
  const pick = <T,>(schema: z.ZodType<T>, v: unknown, d: T): T => {
    const r = schema.safeParse(v);
    return r.success ? r.data : d;
  };
  const storedOptions = (o['options'] ?? {}) as Record<string, unknown>;
  const storedConfig = (storedOptions['config'] ?? {}) as Record<string, unknown>;
  const cur = current.options;
  const options: DraftOptions = {
    modelDir: pick(z.string().max(4096), storedOptions['modelDir'], cur.modelDir),
    apiPort: pick(z.int().min(0).max(65535), storedOptions['apiPort'], cur.apiPort),
    graphBuckets: pick(z.string().max(1000), storedOptions['graphBuckets'], cur.graphBuckets),
    config: {
      model: restoreSection(draftConfigSchemas.model, storedConfig['model'], cur.config.model),
      serving: restoreSection(draftConfigSchemas.serving, storedConfig['serving'], cur.config.serving),
      afd: restoreSection(draftConfigSchemas.afd, storedConfig['afd'], cur.config.afd),
      gpuSharing: restoreSection(draftConfigSchemas.gpuSharing, storedConfig['gpuSharing'], cur.config.gpuSharing),
      restart: restoreSection(draftConfigSchemas.restart, storedConfig['restart'], cur.config.restart),
    },
  };
  const assignments: Record<string, Assignment> = {};
  for (const [k, v] of Object.entries((o['assignments'] ?? {}) as Record<string, unknown>)) {
    const a = assignmentSchema.safeParse(v);
    if (a.success && /^(attention|ffn|colocated|prefill):\d+$/.test(k)) assignments[k] = a.data;
  }
  return {
    choice: pick(z.enum([...PRESETS, 'custom', 'colocated']), o['choice'], current.choice),
    custom: pick(z.string().max(64), o['custom'], current.custom),
    prefill: pick(z.int().min(0).max(MAX_PREFILL_RANKS), o['prefill'], 0),
    replicas: pick(z.int().min(1).max(64), o['replicas'], current.replicas),
    assignments,
    options,
  };
}

/** A number being typed (NaN) is stored as the default. */
function storedDraft(d: Draft): Draft {
  const prefill = d.prefill ?? 0;
  return { choice: d.choice, custom: d.custom, prefill: Number.isFinite(prefill) ? prefill : 0, replicas: Number.isFinite(d.replicas) ? d.replicas : 1, assignments: d.assignments, options: finiteOr(d.options, defaultOptions) };
}

export function createTopologyStore(opts: { storage?: KeyValueStorage | null; saveDelayMs?: number } = {}): StoreApi<TopologyState> {
  const creator = (set: StoreApi<TopologyState>['setState'], get: StoreApi<TopologyState>['getState']): TopologyState => {
    const reassign = (agents: readonly AgentInfo[]): void => set({ assignments: autoAssign(get(), agents) });
    return {
      choice: '2A2F',
      custom: '3A2F',
      prefill: 0,
      replicas: 1,
      assignments: {},
      options: { ...defaultOptions },
      setChoice(choice, agents) {
        set(shapeOf(choice));
        reassign(agents);
      },
      setPrefill(prefill, agents) {
        set({ prefill });
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
      setConfig: (section, patch) => set((s) => ({ options: { ...s.options, config: { ...s.options.config, [section]: { ...s.options.config[section], ...patch } } } })),
    };
  };
  if (!opts.storage) return createStore<TopologyState>()(creator);
  const storage = debouncedStorage<Draft>(opts.storage, { ...(opts.saveDelayMs !== undefined ? { delayMs: opts.saveDelayMs } : {}), prepare: storedDraft });
  return createStore<TopologyState>()(
    persist(creator, {
      name: TOPOLOGY_KEY,
      storage,
      partialize: (s): Draft => ({ choice: s.choice, custom: s.custom, prefill: s.prefill, replicas: s.replicas, assignments: s.assignments, options: s.options }),
      merge: (stored, current) => ({ ...current, ...restoreDraft(stored, current) }),
    }),
  );
}
