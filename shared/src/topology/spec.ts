/**
 * Topology specs: the `xAyF` name (x attention ranks, y FFN ranks), optionally led by
 * `wP` (w prefill ranks: `2P1A1F`), and the structured form
 * `{ prefill?: { dp }, attention: { dp, tp }, ffn: { dp, tp } }` where each role has DP x TP
 * ranks. Prefill ranks (prefill/decode disaggregation) each run the whole model in
 * prefill-only mode and hand a prompt's KV blocks to an attention rank; they are not part
 * of the AFD world (worldSize counts attention + FFN ranks).
 * `validateTopology` checks every rule and returns a `Topology`; the rule names below
 * appear in every error message so a user can look them up.
 *
 * A topology is resolved once, where it enters: `topologySchema` (the zod boundary of the
 * AFD config and the launch spec) outputs the resolved `Topology`, which is passed on as
 * data down to the native connector. Only a process boundary (a role process's
 * `--topology` flag) carries the name, parsed there by the same schema.
 */
import { z } from 'zod';
import { countOf } from '../util/plural.js';

/** Largest rank count accepted per role (keeps control payloads and tests bounded). */
export const MAX_RANKS_PER_ROLE = 1024;

/** Parallelism of one role. Give `dp` and/or `tp`, or `ranks`; missing parts are derived. */
export const roleParallelismSchema = z.strictObject({
  /** Number of ranks of this role; must equal dp x tp when all three are given. */
  ranks: z.number().optional(),
  /** Data-parallel replicas of this role (default: ranks / tp). */
  dp: z.number().optional(),
  /** Tensor-parallel ranks per replica (default 1). */
  tp: z.number().optional(),
});
export type RoleParallelismInput = z.infer<typeof roleParallelismSchema>;

/** Structured topology: rank counts of both roles, each DP x TP, and the prefill ranks. */
export const topologySpecSchema = z.strictObject({
  /** Prefill ranks (whole model, prefill only; default none). */
  prefill: roleParallelismSchema.optional(),
  /** Attention ranks: KV cache, attention, sampling, the HTTP API. */
  attention: roleParallelismSchema,
  /** FFN ranks: dense MLP or MoE experts. */
  ffn: roleParallelismSchema,
});
export type TopologySpec = z.infer<typeof topologySpecSchema>;

/** A topology as users write it: the name `xAyF` (case-insensitive) or the structured form. */
export const topologyInputSchema = z.union([z.string(), topologySpecSchema]);
export type TopologyInput = z.infer<typeof topologyInputSchema>;

const resolvedRoleSchema = z.strictObject({ ranks: z.number(), dp: z.number(), tp: z.number() });
/** A resolved Topology as JSON (what topologySchema outputs), accepted again as input. */
export const resolvedTopologySchema = z.strictObject({
  name: z.string(),
  prefill: resolvedRoleSchema.optional(),
  attention: resolvedRoleSchema,
  ffn: resolvedRoleSchema,
  worldSize: z.number(),
});

/**
 * The topology boundary: a name, a structured spec or an already resolved topology (a
 * parsed config or spec sent on as JSON) in, the resolved `Topology` out; every broken
 * rule is a zod issue.
 */
export const topologySchema = z.union([z.string(), topologySpecSchema, resolvedTopologySchema]).transform((value, ctx): Topology => {
  const result = validateTopology(value);
  if (result.ok) return result.topology;
  for (const problem of result.problems) ctx.addIssue({ code: 'custom', message: problem });
  return z.NEVER;
});

/** Resolved parallelism of one role. */
export interface RoleParallelism {
  /** Ranks of the role (= dp x tp). */
  ranks: number;
  /** Data-parallel replicas. */
  dp: number;
  /** Tensor-parallel ranks per replica. */
  tp: number;
}

/** A validated topology. */
export interface Topology {
  /** Canonical name, e.g. "3A2F", or "2P1A1F" with prefill ranks. */
  name: string;
  /** Prefill ranks (prefill/decode disaggregation); absent when there are none. */
  prefill?: RoleParallelism;
  /** Attention-role parallelism (x = attention.ranks). */
  attention: RoleParallelism;
  /** FFN-role parallelism (y = ffn.ranks). */
  ffn: RoleParallelism;
  /** x + y: every rank of both roles in one world. */
  worldSize: number;
}

/** The rules a topology must satisfy; each error message quotes one of these ids. */
export const TOPOLOGY_RULES = {
  syntax: 'topology-syntax: a topology name is xAyF with positive integers x and y (e.g. 2A2F, 3A2F), optionally led by wP for w prefill ranks (e.g. 2P1A1F)',
  positive: 'positive-sizes: rank counts, DP and TP must be positive integers',
  maxRanks: `max-ranks: each role has at most ${MAX_RANKS_PER_ROLE} ranks`,
  dpTp: 'dp-x-tp: the rank count of a role must equal its DP x TP',
  attentionAtLeastFfn: 'attention-ge-ffn: there must be at least as many attention ranks as FFN ranks (x >= y), so every FFN rank serves at least one attention rank',
  prefillTp: 'prefill-tp-1: a prefill rank runs the whole model on its own (tp 1); give prefill: { dp: w } or the name wPxAyF',
  tpNotImplemented: 'tp-not-implemented: tensor parallelism (tp > 1) is not implemented yet; data parallelism (dp) gives the same rank count',
} as const;

/** Thrown by resolveTopology; `problems` lists every rule broken. */
export class TopologyError extends Error {
  constructor(
    /** One message per broken rule. */
    readonly problems: string[],
  ) {
    super(`invalid topology: ${problems.join('; ')}`);
    this.name = 'TopologyError';
  }
}

/** Outcome of validateTopology. */
export type TopologyResult = { ok: true; topology: Topology } | { ok: false; problems: string[] };

const NAME_RE = /^\s*(?:(\d+)\s*p\s*)?(\d+)\s*a\s*(\d+)\s*f\s*$/i;

function isPositiveInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}

function resolveRole(role: 'prefill' | 'attention' | 'ffn', input: RoleParallelismInput, problems: string[]): RoleParallelism | undefined {
  const before = problems.length;
  for (const key of ['ranks', 'dp', 'tp'] as const) {
    const v = input[key];
    if (v !== undefined && !isPositiveInt(v)) problems.push(`${role}.${key} is ${String(v)} (${TOPOLOGY_RULES.positive})`);
  }
  if (input.ranks === undefined && input.dp === undefined && input.tp === undefined) {
    problems.push(`${role} gives none of ranks, dp, tp (${TOPOLOGY_RULES.positive})`);
  }
  if (problems.length > before) return undefined;
  const tp = input.tp ?? 1;
  let dp = input.dp;
  let ranks = input.ranks;
  if (dp === undefined && ranks !== undefined) {
    if (ranks % tp !== 0) {
      problems.push(`${role}.ranks ${ranks} is not divisible by ${role}.tp ${tp} (${TOPOLOGY_RULES.dpTp})`);
      return undefined;
    }
    dp = ranks / tp;
  }
  dp ??= 1;
  if (ranks === undefined) ranks = dp * tp;
  if (ranks !== dp * tp) {
    problems.push(`${role}.ranks is ${ranks} but dp ${dp} x tp ${tp} = ${dp * tp} (${TOPOLOGY_RULES.dpTp})`);
    return undefined;
  }
  if (ranks > MAX_RANKS_PER_ROLE) {
    problems.push(`${role} has ${ranks} ranks (${TOPOLOGY_RULES.maxRanks})`);
    return undefined;
  }
  return { ranks, dp, tp };
}

/** A resolved topology given as input: its ranks must pass every rule and agree with its name and world size. */
function validateResolved(input: object): TopologyResult {
  const parsed = resolvedTopologySchema.safeParse(input);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.') || 'topology'}: ${i.message}`).join('; ');
    return { ok: false, problems: [`expected a resolved topology { name, prefill?: { ranks, dp, tp }, attention: { ranks, dp, tp }, ffn: { ranks, dp, tp }, worldSize } (${detail})`] };
  }
  const given = parsed.data;
  const result = validateTopology(toSpec(given));
  if (!result.ok) return result;
  const t = result.topology;
  const problems: string[] = [];
  if (given.name.trim().toUpperCase() !== t.name) problems.push(`topology name "${given.name}" does not match its ranks (${t.name})`);
  if (given.worldSize !== t.worldSize) problems.push(`topology worldSize ${given.worldSize} is not attention + FFN ranks = ${t.worldSize}`);
  return problems.length > 0 ? { ok: false, problems } : result;
}

/** Prefill ranks of a topology (0 without prefill/decode disaggregation). */
export function prefillRanksOf(topology: Pick<Topology, 'prefill'>): number {
  return topology.prefill?.ranks ?? 0;
}

/** Validates a topology name, structured spec or resolved topology; never throws. */
export function validateTopology(input: unknown): TopologyResult {
  const problems: string[] = [];
  let spec: TopologySpec;
  if (typeof input === 'object' && input !== null && ('worldSize' in input || 'name' in input)) return validateResolved(input);
  if (typeof input === 'string') {
    const m = NAME_RE.exec(input);
    if (!m) return { ok: false, problems: [`"${input}" is not a topology name (${TOPOLOGY_RULES.syntax})`] };
    spec = { attention: { ranks: Number(m[2]) }, ffn: { ranks: Number(m[3]) } };
    if (m[1] !== undefined) spec.prefill = { ranks: Number(m[1]) };
  } else {
    const parsed = topologySpecSchema.safeParse(input);
    if (!parsed.success) {
      const detail = parsed.error.issues.map((i) => `${i.path.join('.') || 'topology'}: ${i.message}`).join('; ');
      return { ok: false, problems: [`expected a name like "2A2F" or "2P1A1F", or { prefill?: { dp }, attention: { dp, tp }, ffn: { dp, tp } } (${detail})`] };
    }
    spec = parsed.data;
  }
  const attention = resolveRole('attention', spec.attention, problems);
  const ffn = resolveRole('ffn', spec.ffn, problems);
  const prefill = spec.prefill === undefined ? undefined : resolveRole('prefill', spec.prefill, problems);
  if (!attention || !ffn || (spec.prefill !== undefined && !prefill)) return { ok: false, problems };
  if (prefill && prefill.tp !== 1) {
    problems.push(`prefill.tp is ${prefill.tp} (${TOPOLOGY_RULES.prefillTp})`);
    return { ok: false, problems };
  }
  if (attention.ranks < ffn.ranks) {
    problems.push(`${countOf(attention.ranks, 'attention rank')} is fewer than ${countOf(ffn.ranks, 'FFN rank')} (${TOPOLOGY_RULES.attentionAtLeastFfn})`);
    return { ok: false, problems };
  }
  // Until TP exists, a tp > 1 topology must not silently run as data-parallel ranks.
  const name = `${prefill ? `${prefill.ranks}P` : ''}${attention.ranks}A${ffn.ranks}F`;
  for (const [key, r] of [['attention', attention], ['ffn', ffn]] as const) {
    if (r.tp === 1) continue;
    const hint = key === 'ffn' ? '; enableExpertParallel splits the MoE experts over the FFN ranks' : '';
    problems.push(
      `${key}.tp is ${r.tp} (${TOPOLOGY_RULES.tpNotImplemented}): for the same ${r.ranks} ${key} ranks give ${key}: { dp: ${r.ranks} } (tp 1), or the name "${name}", and each rank runs as a data-parallel replica${hint}`,
    );
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    topology: { name, ...(prefill ? { prefill } : {}), attention, ffn, worldSize: attention.ranks + ffn.ranks },
  };
}

/**
 * Parses and validates a topology name or spec where it enters outside a schema (a CLI
 * flag, a test); throws TopologyError naming each broken rule. Code that holds a
 * resolved Topology passes it on instead of resolving it again.
 */
export function resolveTopology(input: TopologyInput | Topology): Topology {
  const result = validateTopology(input);
  if (!result.ok) throw new TopologyError(result.problems);
  return result.topology;
}

/** The structured spec of a resolved topology (round-trips through resolveTopology). */
export function toSpec(topology: Pick<Topology, 'prefill' | 'attention' | 'ffn'>): TopologySpec {
  return {
    ...(topology.prefill ? { prefill: { ranks: topology.prefill.ranks, dp: topology.prefill.dp, tp: topology.prefill.tp } } : {}),
    attention: { ranks: topology.attention.ranks, dp: topology.attention.dp, tp: topology.attention.tp },
    ffn: { ranks: topology.ffn.ranks, dp: topology.ffn.dp, tp: topology.ffn.tp },
  };
}
