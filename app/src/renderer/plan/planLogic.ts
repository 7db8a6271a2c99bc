/**
 * The Plan screen's logic, pure: its inputs checked into a planner query, the planner run
 * over a profile (shared/src/plan, the same code as `afd-agent plan`), the profile's cost
 * curves as chart series, and a plan row turned into a Topology screen draft.
 */
import { describeRow, findLinkPreset, LINK_PRESETS, layerCosts, memoryModel, plan, type CostProfile, type PlanQuery, type PlanResult, type PlanRow } from '@afd/shared';
import { PRESETS, type TopologyChoice } from '../stores/topologyDraft.js';

/** The screen's inputs as typed. */
export interface PlanInputs {
  gpus: number;
  tpotMs: number;
  context: number;
  maxBatch: number;
  /** Micro-batch counts, comma-separated ("1,2,4"). */
  stages: string;
  /** A preset's name, or "profile:<connector>" for a connector measured in the profile. */
  link: string;
  /** Memory of one GPU, GiB; NaN: the profile's device memory (none: capacity not modelled). */
  gpuMemGib: number;
}

export const defaultPlanInputs: PlanInputs = { gpus: 4, tpotMs: 40, context: 256, maxBatch: 256, stages: '1,2,4', link: 'profile:tcp', gpuMemGib: NaN };

/** What the worker (or the page, where no worker runs) is given: plain data. */
export interface PlanJob {
  profile: CostProfile;
  query: PlanQuery;
  link: string;
}

/** The link choices for a profile: its measured connectors, then the presets. */
export function linkChoices(profile: CostProfile | null): { value: string; label: string }[] {
  const measured = (profile?.connectors ?? []).map((c) => ({ value: `profile:${c.connector}`, label: `profile: ${c.connector} (measured)` }));
  return [...measured, ...LINK_PRESETS.map((l) => ({ value: l.name, label: `${l.name} (${(l.bandwidthBytesPerS / 1e9).toFixed(1)} GB/s, ${l.latencyUs} us)` }))];
}

/** The link to start from for a profile: the one already picked when it is there, else its first. */
export function defaultLink(profile: CostProfile | null, current: string): string {
  const choices = linkChoices(profile);
  return choices.some((c) => c.value === current) ? current : (choices[0]?.value ?? 'nvlink4');
}

const whole = (v: number, name: string, min: number, max: number): string | null =>
  Number.isInteger(v) && v >= min && v <= max ? null : `${name} must be a whole number from ${min} to ${max}`;

/** The fields a single-profile plan and a mixed cluster share (TPOT, context, batch, micro-batches), checked; the micro-batch counts parsed. */
export function checkSearchFields(i: PlanInputs): { ok: true; stageCounts: number[] } | { ok: false; error: string } {
  const problem =
    (Number.isFinite(i.tpotMs) && i.tpotMs > 0 ? null : 'TPOT target must be a number of milliseconds above 0') ??
    whole(i.context, 'Context', 1, 1 << 24) ??
    whole(i.maxBatch, 'Max batch', 1, 65536);
  if (problem) return { ok: false, error: problem };
  const parts = i.stages.split(/[\s,]+/).filter(Boolean);
  const stageCounts = parts.map(Number);
  if (parts.length === 0 || stageCounts.some((s) => !Number.isInteger(s) || s < 1 || s > 64)) {
    return { ok: false, error: `Micro-batches: "${i.stages}" must list whole numbers from 1 to 64, e.g. 1,2,4` };
  }
  return { ok: true, stageCounts: [...new Set(stageCounts)] };
}

/** Checks the inputs into a job, or the first problem as a sentence. */
export function planJob(profile: CostProfile, i: PlanInputs): { ok: true; job: PlanJob } | { ok: false; error: string } {
  const gpus = whole(i.gpus, 'GPUs', 1, 256);
  if (gpus) return { ok: false, error: gpus };
  const fields = checkSearchFields(i);
  if (!fields.ok) return fields;
  if (!Number.isNaN(i.gpuMemGib) && !(i.gpuMemGib > 0)) return { ok: false, error: 'GPU memory must be a number of GiB above 0, or empty for the profile\'s' };
  if (i.link.startsWith('profile:')) {
    const name = i.link.slice('profile:'.length);
    if (!profile.connectors.some((c) => c.connector === name)) return { ok: false, error: `the profile has no ${name} connector curve: pick a link preset` };
  } else if (!LINK_PRESETS.some((l) => l.name === i.link)) {
    return { ok: false, error: `link "${i.link}" is not a preset` };
  }
  const memory = memoryModel(profile, Number.isNaN(i.gpuMemGib) ? undefined : i.gpuMemGib);
  const query = { gpus: i.gpus, tpotMs: i.tpotMs, context: i.context, maxBatch: i.maxBatch, stageCounts: fields.stageCounts, ...(memory ? { memory } : {}) };
  return { ok: true, job: { profile, link: i.link, query } };
}

/** Runs the planner on a job (in the worker, or inline). */
export function runPlanJob(job: PlanJob): PlanResult {
  const costs = job.link.startsWith('profile:') ? layerCosts(job.profile, 'profile', job.link.slice('profile:'.length)) : layerCosts(job.profile, findLinkPreset(job.link));
  return plan(costs, job.query);
}

/** A plan row's name in the table, as `afd-agent plan` prints it: "3A1F with DBO x2", "4 colocated replicas", "EP4 x2". */
export function rowLabel(r: PlanRow): string {
  return describeRow(r);
}

/** Why a row cannot fill the Topology screen (null when it can). */
export function notLaunchable(r: PlanRow): string | null {
  return r.kind === 'ep' ? 'expert-parallel serving without AFD is not a topology the console launches; take an xAyF row with expert parallelism' : null;
}

/** What "Use this topology" writes into the Topology screen's draft. */
export interface DraftFill {
  choice: TopologyChoice;
  custom?: string;
  replicas?: number;
  dbo?: boolean;
  /** The FFN ranks as one expert-parallel group. */
  expertParallel?: boolean;
  /** One line for the Topology screen saying where the draft came from and what it leaves out. */
  note: string;
}

export function draftFromRow(r: PlanRow): DraftFill | null {
  if (notLaunchable(r)) return null;
  const predicted = `batch ${r.batchPerRank} per ${r.kind === 'afd' ? 'attention rank' : 'replica'}, predicted TPOT ${r.tpotMs.toFixed(2)} ms, ${r.tokensPerSPerGpu.toFixed(1)} tok/s per GPU`;
  if (r.kind === 'colocated') return { choice: 'colocated', replicas: r.replicas, note: `From the Plan screen: ${rowLabel(r)} (${predicted}).` };
  const preset = (PRESETS as readonly string[]).includes(r.topology);
  const extra: string[] = [];
  if (r.stages > 2) extra.push(`the plan has ${r.stages} micro-batches; the engine overlaps 2 (DBO), so DBO is on`);
  if (r.replicas > 1) extra.push(`the plan runs ${r.replicas} copies; this launches one`);
  return {
    choice: preset ? (r.topology as TopologyChoice) : 'custom',
    ...(preset ? {} : { custom: r.topology }),
    dbo: r.stages >= 2,
    expertParallel: (r.epSize ?? 1) > 1,
    note: `From the Plan screen: ${rowLabel(r)} (${predicted}).${extra.length > 0 ? ` Note: ${extra.join('; ')}.` : ''}`,
  };
}

/** One line of a chart: a name and its points in x order. */
export interface CurveSeries {
  name: string;
  points: { x: number; y: number }[];
}

/** The profile's three curves as chart series: attention per context, FFN, each connector. */
export function profileCurves(p: CostProfile): { attention: CurveSeries[]; ffn: CurveSeries[]; connectors: CurveSeries[] } {
  const contexts = [...new Set(p.attention.map((a) => a.context))].sort((a, b) => a - b);
  const byX = (pts: { x: number; y: number }[]) => [...pts].sort((a, b) => a.x - b.x);
  return {
    attention: contexts.map((c) => ({ name: `context ${c}`, points: byX(p.attention.filter((a) => a.context === c).map((a) => ({ x: a.batch, y: a.ms }))) })),
    ffn: [{ name: 'FFN', points: byX(p.ffn.map((f) => ({ x: f.tokens, y: f.ms }))) }],
    connectors: p.connectors.map((c) => ({ name: c.connector, points: byX(c.points.map((q) => ({ x: q.bytes, y: q.ms }))) })),
  };
}
