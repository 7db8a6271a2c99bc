/**
 * The Topology screen's draft as a store, kept in browser storage (shape, custom text,
 * replicas, rank placements and every launch option): a reload shows the same draft.
 * Stored values are validated per field; one that does not parse keeps the default.
 * Evaluation is derived in the view.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import { persist } from 'zustand/middleware';
import { z } from 'zod';
import { afdConnectorSchema, dummySeedSchema, epTransportSchema, loadFormatSchema, type AgentInfo } from '@afd/shared';
import { debouncedStorage, STORAGE_PREFIX, type KeyValueStorage } from '../lib/persist.js';
import { autoAssign, defaultOptions, PRESETS, type Assignment, type Draft, type DraftOptions, type TopologyChoice } from './topologyDraft.js';

export interface TopologyState extends Draft {
  setChoice(choice: TopologyChoice, agents: readonly AgentInfo[]): void;
  setCustom(text: string, agents: readonly AgentInfo[]): void;
  setReplicas(n: number, agents: readonly AgentInfo[]): void;
  assign(key: string, a: Assignment): void;
  /** Fills unassigned ranks (force: re-spread all). */
  autoAssign(agents: readonly AgentInfo[], force?: boolean): void;
  setOptions(patch: Partial<DraftOptions>): void;
}

/** Storage key of the draft. */
export const TOPOLOGY_KEY = `${STORAGE_PREFIX}topology.v1`;

const assignmentSchema = z.object({ agentId: z.string().min(1), backend: z.enum(['cpu', 'cuda']), deviceIndex: z.int().min(0) });
const optionSchemas: { [K in keyof DraftOptions]: z.ZodType<DraftOptions[K]> } = {
  modelDir: z.string().max(4096),
  apiPort: z.int().min(0).max(65535),
  connector: afdConnectorSchema,
  afdPort: z.int().min(1).max(65535),
  dboEnabled: z.boolean(),
  dboDecodeThreshold: z.int().min(1),
  dboPrefillThreshold: z.int().min(1),
  computeGateOnAttention: z.boolean(),
  graphPolicy: z.enum(['off', 'decode-only']),
  graphBuckets: z.string().max(1000),
  stepDeadlineMs: z.int().min(1),
  loadFormat: loadFormatSchema,
  seed: dummySeedSchema,
  expertParallel: z.boolean(),
  epTransport: epTransportSchema,
};

/** A stored draft read back over `current`, field by field. */
export function restoreDraft(stored: unknown, current: Draft): Draft {
  const o = (typeof stored === 'object' && stored !== null ? stored : {}) as Record<string, unknown>;
  const pick = <T,>(schema: z.ZodType<T>, v: unknown, d: T): T => {
    const r = schema.safeParse(v);
    return r.success ? r.data : d;
  };
  const storedOptions = (o['options'] ?? {}) as Record<string, unknown>;
  const options = { ...current.options };
  for (const key of Object.keys(optionSchemas) as (keyof DraftOptions)[]) {
    (options as Record<string, unknown>)[key] = pick(optionSchemas[key] as z.ZodType<unknown>, storedOptions[key], current.options[key]);
  }
  const assignments: Record<string, Assignment> = {};
  for (const [k, v] of Object.entries((o['assignments'] ?? {}) as Record<string, unknown>)) {
    const a = assignmentSchema.safeParse(v);
    if (a.success && /^(attention|ffn|colocated):\d+$/.test(k)) assignments[k] = a.data;
  }
  return {
    choice: pick(z.enum([...PRESETS, 'custom', 'colocated']), o['choice'], current.choice),
    custom: pick(z.string().max(64), o['custom'], current.custom),
    replicas: pick(z.int().min(1).max(64), o['replicas'], current.replicas),
    assignments,
    options,
  };
}

/** A number being typed (NaN) is stored as the default. */
function storedDraft(d: Draft): Draft {
  const options = { ...d.options };
  for (const [k, v] of Object.entries(options)) if (typeof v === 'number' && !Number.isFinite(v)) (options as Record<string, unknown>)[k] = defaultOptions[k as keyof DraftOptions];
  return { choice: d.choice, custom: d.custom, replicas: Number.isFinite(d.replicas) ? d.replicas : 1, assignments: d.assignments, options };
}

export function createTopologyStore(opts: { storage?: KeyValueStorage | null; saveDelayMs?: number } = {}): StoreApi<TopologyState> {
  const creator = (set: StoreApi<TopologyState>['setState'], get: StoreApi<TopologyState>['getState']): TopologyState => {
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
  };
  if (!opts.storage) return createStore<TopologyState>()(creator);
  const storage = debouncedStorage<Draft>(opts.storage, { ...(opts.saveDelayMs !== undefined ? { delayMs: opts.saveDelayMs } : {}), prepare: storedDraft });
  return createStore<TopologyState>()(
    persist(creator, {
      name: TOPOLOGY_KEY,
      storage,
      partialize: (s): Draft => ({ choice: s.choice, custom: s.custom, replicas: s.replicas, assignments: s.assignments, options: s.options }),
      merge: (stored, current) => ({ ...current, ...restoreDraft(stored, current) }),
    }),
  );
}
