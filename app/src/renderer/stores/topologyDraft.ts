/**
 * The Topology screen's draft: preset or custom xAyF (or colocated replicas), the prefill
 * ranks beside them (wPxAyF), a device for every rank on any connected agent, and the
 * launch options. `evaluateDraft` turns it into a launch spec and lists every problem,
 * naming the broken rule, before launch.
 */
import {
  afdOptionsSchema,
  DEFAULT_BATCH_BUCKETS,
  fieldIssues,
  gpuSharingConfigSchema,
  launchSpecSchema,
  modelSourceSchema,
  restartPolicySchema,
  servingConfigSchema,
  prefillRanksOf,
  validateTopology,
  worldOrder,
  type AfdOptions,
  type AgentInfo,
  type GpuSharingConfig,
  type LaunchSpecInput,
  type ModelSource,
  type ProcessRole,
  type RestartPolicy,
  type ServingConfig,
  type Topology,
} from '@afd/shared';
import { placementProblems } from '../../common/placementCheck.js';
import { hostLoadWarnings, modelDirChecks } from './draftChecks.js';
import { gpuSharingChecks } from './gpuSharingChecks.js';
import { inspectKey, type Inspection } from './inspectStore.js';

export const PRESETS = ['1A1F', '2A1F', '2A2F', '4A2F', '4A4F'] as const;
export type TopologyChoice = (typeof PRESETS)[number] | 'custom' | 'colocated';

/** Presets with prefill ranks: an xAyF preset and the prefill count beside it. */
export const PD_PRESETS = [
  { id: '1P1A1F', choice: '1A1F', prefill: 1 },
  { id: '2P1A1F', choice: '1A1F', prefill: 2 },
] as const satisfies readonly { id: string; choice: (typeof PRESETS)[number]; prefill: number }[];
export type PdPresetId = (typeof PD_PRESETS)[number]['id'];
/** What a Shape radio picks: a topology choice, or a preset with prefill ranks. */
export type ShapeChoice = TopologyChoice | PdPresetId;

/** Most prefill ranks the screen offers. */
export const MAX_PREFILL_RANKS = 64;

/** The prefill ranks a custom name gives itself ("2P3A2F" -> 2), or null when it names none. */
export function customPrefill(text: string): number | null {
  const m = /^\s*(\d+)\s*p/i.exec(text);
  return m ? Number(m[1]) : null;
}

/** The choice and prefill count a Shape radio stands for (a plain preset or custom: no prefill ranks until given). */
export function shapeOf(choice: ShapeChoice): { choice: TopologyChoice; prefill: number } {
  const pd = PD_PRESETS.find((p) => p.id === choice);
  return pd ? { choice: pd.choice, prefill: pd.prefill } : { choice: choice as TopologyChoice, prefill: 0 };
}

/** The Shape radio the draft shows checked: a preset with prefill ranks where one matches, else its choice. */
export function shapeChoiceOf(d: Pick<Draft, 'choice' | 'prefill'>): ShapeChoice {
  return PD_PRESETS.find((p) => p.choice === d.choice && p.prefill === (d.prefill ?? 0))?.id ?? d.choice;
}

/** Where one rank runs. */
export interface Assignment {
  agentId: string;
  backend: 'cpu' | 'cuda';
  deviceIndex: number;
}

/**
 * The launch's config sections the screen edits: the shared schemas' own objects, every
 * field present with the schema's default (the model directory is the text field below).
 * A new option of a section needs no line here: one control on the Topology screen.
 */
export interface DraftConfig {
  model: Omit<ModelSource, 'dir'>;
  serving: ServingConfig;
  afd: AfdOptions;
  gpuSharing: GpuSharingConfig;
  /** What the agents do when a rank dies (the Launch screen shows the restarts). */
  restart: RestartPolicy;
}

export interface DraftOptions {
  /** The model directory as typed; empty = the built-in model. */
  modelDir: string;
  /** Front router port as typed (0 = any free). */
  apiPort: number;
  /** CUDA graph buckets as typed, comma-separated (becomes config.afd.cudaGraph.batchBuckets). */
  graphBuckets: string;
  /** Every other launch option, by section. */
  config: DraftConfig;
}

export interface Draft {
  choice: TopologyChoice;
  /** Text of the custom topology, e.g. "3A2F" (or "2P3A2F": its prefill ranks win over `prefill`). */
  custom: string;
  /** Prefill ranks beside the AFD ranks (wPxAyF); absent or 0 = none (a draft stored before prefill ranks has none). */
  prefill?: number;
  /** Replicas of a colocated launch. */
  replicas: number;
  /** Keyed by "role:rank". */
  assignments: Record<string, Assignment>;
  options: DraftOptions;
}

/** The section schemas the draft's config follows (restoreDraft reads stored drafts through them). */
export const draftConfigSchemas = {
  model: modelSourceSchema.omit({ dir: true }),
  serving: servingConfigSchema,
  afd: afdOptionsSchema,
  gpuSharing: gpuSharingConfigSchema,
  restart: restartPolicySchema,
} as const;

/** Every section at the schemas' defaults. */
export function defaultDraftConfig(): DraftConfig {
  return { model: draftConfigSchemas.model.parse({}), serving: draftConfigSchemas.serving.parse({}), afd: draftConfigSchemas.afd.parse({}), gpuSharing: draftConfigSchemas.gpuSharing.parse({}), restart: draftConfigSchemas.restart.parse({}) };
}

export const defaultOptions: DraftOptions = {
  modelDir: '',
  apiPort: 0,
  graphBuckets: DEFAULT_BATCH_BUCKETS.join(', '),
  config: defaultDraftConfig(),
};

export interface DraftRank {
  role: ProcessRole;
  rank: number;
}

export interface DraftEvaluation {
  topology: Topology | null;
  /** Ranks to place, in world order (FFN first), then the prefill ranks (outside the AFD world). */
  ranks: DraftRank[];
  /** The spec to send when `problems` is empty. */
  spec: LaunchSpecInput | null;
  /** Blocking problems, each naming what and why. */
  problems: string[];
  /** Non-blocking remarks (e.g. two ranks on one GPU, more CPU ranks than cores). */
  warnings: string[];
  /** What is still being checked (the model directory on an agent); blocks launch until answered. */
  pending: string[];
}

export const rankKey = (r: DraftRank): string => `${r.role}:${r.rank}`;

/** The topology text the draft stands for: the preset or custom text, led by `wP` when it has prefill ranks. */
export function draftTopologyText(d: Pick<Draft, 'choice' | 'custom' | 'prefill'>): string {
  const base = d.choice === 'custom' ? d.custom : d.choice;
  if (d.choice === 'colocated' || customPrefill(base) !== null) return base;
  const w = d.prefill ?? 0;
  return w === 0 ? base : `${Number.isFinite(w) ? w : ''}P${base.trim()}`;
}

/** Ranks of the draft in world order (FFN ranks first), then its prefill ranks, or [] when the topology is invalid. */
export function draftRanks(d: Draft): { topology: Topology | null; ranks: DraftRank[]; problems: string[] } {
  if (d.choice === 'colocated') {
    if (!Number.isInteger(d.replicas) || d.replicas < 1 || d.replicas > 64) {
      return { topology: null, ranks: [], problems: [`colocated replicas must be a whole number from 1 to 64 (got ${d.replicas})`] };
    }
    return { topology: null, ranks: Array.from({ length: d.replicas }, (_, rank) => ({ role: 'colocated' as const, rank })), problems: [] };
  }
  const w = d.prefill ?? 0;
  if (!Number.isInteger(w) || w < 0 || w > MAX_PREFILL_RANKS) {
    return { topology: null, ranks: [], problems: [`prefill ranks must be a whole number from 0 to ${MAX_PREFILL_RANKS} (got ${Number.isNaN(w) ? 'nothing' : w})`] };
  }
  const v = validateTopology(draftTopologyText(d));
  if (!v.ok) return { topology: null, ranks: [], problems: v.problems };
  const prefill = Array.from({ length: prefillRanksOf(v.topology) }, (_, rank) => ({ role: 'prefill' as const, rank }));
  return { topology: v.topology, ranks: [...worldOrder(v.topology).map((w) => ({ role: w.role, rank: w.rank })), ...prefill], problems: [] };
}

/** Devices to place ranks on: GPUs of each connected agent, or its CPU when it has none. */
export function deviceSlots(agents: readonly AgentInfo[]): Assignment[] {
  const slots: Assignment[] = [];
  for (const a of agents) {
    if (a.state !== 'connected' || !a.inventory) continue;
    const gpus = a.inventory.devices.filter((d) => d.kind === 'cuda');
    if (gpus.length === 0) slots.push({ agentId: a.agentId, backend: 'cpu', deviceIndex: 0 });
    for (const g of gpus) slots.push({ agentId: a.agentId, backend: 'cuda', deviceIndex: g.index });
  }
  return slots;
}

/** Keeps valid assignments and spreads the unassigned ranks over the device slots round-robin. */
export function autoAssign(d: Draft, agents: readonly AgentInfo[], force = false): Record<string, Assignment> {
  const slots = deviceSlots(agents);
  const out: Record<string, Assignment> = {};
  const { ranks } = draftRanks(d);
  const connected = new Set(agents.filter((a) => a.state === 'connected').map((a) => a.agentId));
  const used = new Map<string, number>();
  const slotKey = (s: Assignment): string => `${s.agentId}/${s.backend}:${s.deviceIndex}`;
  if (!force) {
    for (const r of ranks) {
      const cur = d.assignments[rankKey(r)];
      if (cur && connected.has(cur.agentId)) {
        out[rankKey(r)] = cur;
        used.set(slotKey(cur), (used.get(slotKey(cur)) ?? 0) + 1);
      }
    }
  }
  for (const r of ranks) {
    if (out[rankKey(r)] || slots.length === 0) continue;
    // The least used slot, first in order on ties.
    let best = slots[0]!;
    for (const s of slots) if ((used.get(slotKey(s)) ?? 0) < (used.get(slotKey(best)) ?? 0)) best = s;
    out[rankKey(r)] = { ...best };
    used.set(slotKey(best), (used.get(slotKey(best)) ?? 0) + 1);
  }
  return out;
}

/** Parses "1, 2, 4" into ascending positive integers, or an error sentence. */
export function parseBuckets(text: string): { ok: true; value: number[] } | { ok: false; error: string } {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0) return { ok: false, error: 'CUDA graph buckets: give at least one size, e.g. "1, 2, 4, 8"' };
  const value = parts.map(Number);
  const bad = parts.find((p, i) => !Number.isInteger(value[i]) || (value[i] ?? 0) < 1);
  if (bad !== undefined) return { ok: false, error: `CUDA graph buckets: "${bad}" is not a positive whole number` };
  if (value.some((v, i) => i > 0 && v <= (value[i - 1] ?? 0))) return { ok: false, error: 'CUDA graph buckets must be strictly ascending (e.g. 1, 2, 4, 8)' };
  return { ok: true, value };
}

/** Checks the draft against the agents and what they said about the model directory (`inspections`). */
export function evaluateDraft(d: Draft, agents: readonly AgentInfo[], inspections: Readonly<Record<string, Inspection>> = {}): DraftEvaluation {
  const { topology, ranks, problems } = draftRanks(d);
  const warnings: string[] = [];
  const pending: string[] = [];
  if (problems.length > 0) return { topology, ranks, spec: null, problems, warnings, pending };
  if (agents.filter((a) => a.state === 'connected').length === 0) {
    problems.push('no agent is connected: add one on the Agents screen');
  }
  const placements: NonNullable<LaunchSpecInput['placements']> = [];
  for (const r of ranks) {
    const a = d.assignments[rankKey(r)];
    if (!a) {
      problems.push(`${r.role} rank ${r.rank} has no device: pick one in its row`);
      continue;
    }
    placements.push({ role: r.role, rank: r.rank, agentId: a.agentId, backend: a.backend, deviceIndex: a.deviceIndex });
  }
  const byId = new Map(agents.map((a) => [a.agentId, a]));
  problems.push(...placementProblems({ placements: placements.map((p) => ({ ...p, deviceIndex: p.deviceIndex ?? 0 })) }, (id) => byId.get(id)));
  const sharing = gpuSharingChecks(placements.map((p) => ({ ...p, deviceIndex: p.deviceIndex ?? 0 })), agents, d.options.config.gpuSharing);
  problems.push(...sharing.problems);
  warnings.push(...sharing.warnings);

  const o = d.options;
  if (o.modelDir.trim() !== '' && !o.modelDir.trim().startsWith('/')) {
    problems.push(`model directory "${o.modelDir}" must be an absolute path on the agent host (or empty for the built-in model)`);
  }
  const modelDir = o.modelDir.trim() === '' ? null : o.modelDir.trim();
  const placed = placements.map((p) => ({ ...p, deviceIndex: p.deviceIndex ?? 0 }));
  const dirChecks = modelDirChecks(modelDir ?? '', placed, inspections, o.config.model.loadFormat);
  problems.push(...dirChecks.problems);
  warnings.push(...dirChecks.warnings);
  pending.push(...dirChecks.pending);
  const firstAgent = placed[0]?.agentId;
  const seen = modelDir && firstAgent ? inspections[inspectKey(firstAgent, modelDir)] : undefined;
  warnings.push(...hostLoadWarnings(placed, agents, seen?.state === 'done' ? seen.result : null));
  const buckets = parseBuckets(o.graphBuckets);
  if (!buckets.ok && d.choice !== 'colocated') problems.push(buckets.error);
  const { afd } = o.config;
  const sections = {
    model: { ...o.config.model, dir: modelDir },
    serving: o.config.serving,
    afd: { ...afd, cudaGraph: { ...afd.cudaGraph, ...(buckets.ok ? { batchBuckets: buckets.value } : {}) } },
    gpuSharing: o.config.gpuSharing,
    restart: o.config.restart,
  };
  const spec: LaunchSpecInput =
    d.choice === 'colocated'
      ? { mode: 'colocated', placements, apiPort: o.apiPort, ...sections }
      : { mode: 'afd', topology: draftTopologyText(d).trim(), placements, apiPort: o.apiPort, ...sections };
  const parsed = launchSpecSchema.safeParse(spec);
  if (!parsed.success) {
    for (const i of fieldIssues(parsed.error)) {
      const msg = i.path ? `${i.path}: ${i.message}` : i.message;
      if (!problems.includes(msg)) problems.push(msg);
    }
  }
  return { topology, ranks, spec: problems.length === 0 && pending.length === 0 ? spec : null, problems, warnings, pending };
}
