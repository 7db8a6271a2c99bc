/**
 * Launch spec: the whole topology, where each rank runs, and the AFD options. The
 * console builds one spec and sends it to every agent involved; each agent starts the
 * placements whose agentId is its own. Also the rank and topology states agents report.
 */
import { z } from 'zod';
import { afdOptionsSchema, type AfdOptions } from '../config/afdConfig.js';
import { resolveEpTransport, TRANSPORTS, type AfdConnector } from '../config/connectors.js';
import { modelSourceSchema } from '../config/modelSource.js';
import { apiOptionsSchema } from '../config/rankConfig.js';
import { servingConfigSchema } from '../config/servingConfig.js';
import { prefillRanksOf, topologySchema, type Topology } from '../topology/spec.js';
import { ffnRankOf } from '../topology/mapping.js';
import { backendSchema } from './inventory.js';
import { processRoleSchema, rolePhaseSchema } from './role.js';
import { restartPolicySchema } from './launchOptions.js';
import { gpuShareStateSchema, gpuSharingConfigSchema, smPercentSchema, type GpuSharingConfig } from './gpuSharing.js';

const rankIndex = z.int().min(0, 'ranks are zero-based and cannot be negative');

/** Where one rank runs. */
export const rankPlacementSchema = z.strictObject({
  /** Role of the rank (attention or ffn in AFD mode, colocated in colocated mode). */
  role: processRoleSchema,
  /** Rank within its role. */
  rank: rankIndex,
  /** Id of the agent (host) that runs it, as the console named the agent. */
  agentId: z.string().min(1),
  /** Compute backend. */
  backend: backendSchema,
  /** CUDA device index on that host (ignored for cpu; default 0). */
  deviceIndex: z.int().min(0).default(0),
  /** CPU threads of the rank; omitted = the role process default. */
  threads: z.int().min(1).optional(),
  /** Percent of its GPU's SMs under MPS when the GPU is shared (wins over gpuSharing.smShare of its role); omitted = the role's. */
  smShare: smPercentSchema.optional(),
});
export type RankPlacement = z.infer<typeof rankPlacementSchema>;

const common = {
  /**
   * Which model every rank serves and where its weights come from. `dir` is an absolute path
   * on the agent hosts (an agent's working directory means nothing to the client that sends
   * the spec); null = the built-in model.
   */
  model: modelSourceSchema
    .refine((m) => m.dir === null || m.dir.startsWith('/'), { message: 'must be an absolute path on the agent hosts (it is not resolved against any working directory)', path: ['dir'] })
    .prefault({}),
  /** Port of the topology's front router (OpenAI API); 0 = ephemeral (default 8000). */
  apiPort: z.int().min(0).max(65535).default(8000),
  /** What each agent does when one of its ranks dies (default: leave it failed). */
  restart: restartPolicySchema.prefault({}),
  /** Serving limits of every rank (the role flags of the same names). */
  serving: servingConfigSchema.prefault({}),
  /** The OpenAI API's options (the rank config's api section without the address): CORS for every serving rank and the front router, the tool-call parser for every serving rank. */
  api: apiOptionsSchema.prefault({}),
  /** Options of how steps run, applied to every rank (connector, port, DBO, gate, CUDA graphs, deadline, NCCL env, expert parallelism); a colocated launch uses its cudaGraph. */
  afd: afdOptionsSchema.prefault({}),
  /** How ranks that share a GPU run there (CUDA MPS or time slicing), and their SM shares under MPS. */
  gpuSharing: gpuSharingConfigSchema.prefault({}),
};

/** A disaggregated launch: x attention ranks and y FFN ranks (and w prefill ranks for wPxAyF). */
export const afdLaunchSpecSchema = z.strictObject({
  /** Launch mode. */
  mode: z.literal('afd'),
  /** Topology name ("3A2F") or structured spec; must pass every topology rule. The output is the resolved Topology. */
  topology: topologySchema,
  /** One placement per rank: every attention rank and every FFN rank exactly once. */
  placements: z.array(rankPlacementSchema).min(2),
  /**
   * Address other hosts reach each agent's ranks at (agentId -> host name or IP), used as
   * the FFN ranks' rendezvous hosts across agents; an agent not listed is reached at
   * 127.0.0.1 (every rank on one host). Default {}.
   */
  agentHosts: z.record(z.string().min(1), z.string().min(1)).default({}),
  ...common,
});

/** A colocated launch: whole-model ranks, no AFD (each rank a data-parallel replica). */
export const colocatedLaunchSpecSchema = z.strictObject({
  /** Launch mode. */
  mode: z.literal('colocated'),
  /** One placement per replica, ranks 0..n-1, role colocated. */
  placements: z.array(rankPlacementSchema).min(1),
  ...common,
});

function checkPlacements(
  placements: readonly RankPlacement[],
  expected: Record<string, number>,
  ctx: z.RefinementCtx,
): void {
  const seen = new Set<string>();
  placements.forEach((p, i) => {
    const count = expected[p.role];
    if (count === undefined) {
      ctx.addIssue({ code: 'custom', path: ['placements', i, 'role'], message: `role ${p.role} has no ranks in this launch (expected ${Object.keys(expected).join(' or ')})` });
      return;
    }
    if (p.rank >= count) {
      ctx.addIssue({ code: 'custom', path: ['placements', i, 'rank'], message: `${p.role} rank ${p.rank} does not exist (valid: 0..${count - 1})` });
    }
    const key = `${p.role}:${p.rank}`;
    if (seen.has(key)) ctx.addIssue({ code: 'custom', path: ['placements', i], message: `${p.role} rank ${p.rank} is placed twice` });
    seen.add(key);
  });
  for (const [role, count] of Object.entries(expected)) {
    const missing = Array.from({ length: count }, (_, r) => r).filter((r) => !seen.has(`${role}:${r}`));
    if (missing.length > 0) ctx.addIssue({ code: 'custom', path: ['placements'], message: `no placement for ${role} rank(s) ${missing.join(', ')}` });
  }
}

/** "role rank" of each placement that runs on the CPU. */
function onCpu(placements: readonly RankPlacement[]): string[] {
  return placements.filter((p) => p.backend !== 'cuda').map((p) => `${p.role} ${p.rank}`);
}

/**
 * The connector's needs of the placements (the one place this rule lives), from the
 * transport table: a device transport needs every rank on CUDA; a one-host transport
 * (CUDA IPC) needs every rank on one host (agent); a GPU-per-rank one (NCCL: a two-rank
 * communicator per attention-FFN pair) needs each attention rank off its FFN rank's GPU.
 */
function checkConnector(connector: AfdConnector, topology: Topology, placements: readonly RankPlacement[], ctx: z.RefinementCtx): void {
  const info = TRANSPORTS[connector];
  const path = ['afd', 'connector'];
  const cpu = onCpu(placements);
  if (info.needsCuda && cpu.length > 0) {
    ctx.addIssue({ code: 'custom', path, message: `connector ${connector} needs every rank on a CUDA device (it moves GPU memory; on cpu: ${cpu.join(', ')}); use connector tcp for CPU ranks` });
  }
  const agents = [...new Set(placements.map((p) => p.agentId))];
  if (info.oneHostOnly && agents.length > 1) {
    ctx.addIssue({ code: 'custom', path, message: `connector ${connector} (CUDA IPC) needs every rank on one host (ranks are on agents ${agents.join(', ')}); use connector nccl across hosts` });
  }
  if (info.gpuPerRank) {
    const gpuOf = (p: RankPlacement | undefined): string | null => (p && p.backend === 'cuda' ? `${p.agentId} GPU ${p.deviceIndex}` : null);
    for (const a of placements.filter((p) => p.role === 'attention')) {
      if (a.rank >= topology.attention.ranks) continue; // reported by checkPlacements
      const f = ffnRankOf(topology, a.rank);
      const gpu = gpuOf(a);
      if (gpu !== null && gpu === gpuOf(placements.find((p) => p.role === 'ffn' && p.rank === f))) {
        ctx.addIssue({ code: 'custom', path, message: `connector ${connector} needs an attention rank and its FFN rank on different GPUs (attention ${a.rank} and ffn ${f} are both on ${gpu}: NCCL refuses two ranks of one communicator on one GPU); use connector peer for ranks that share a host's GPUs` });
      }
    }
  }
}

/**
 * Expert parallelism's exchange has the same needs of the FFN ranks, from the same table:
 * a device transport (asked, or auto under a device connector) needs every FFN rank on
 * CUDA; a one-host one (CUDA IPC) every FFN rank on one host; a GPU-per-rank one (an NCCL
 * communicator refuses two ranks on one GPU) every FFN rank on a GPU of its own.
 */
function checkEpTransport(afd: AfdOptions, placements: readonly RankPlacement[], ctx: z.RefinementCtx): void {
  if (!afd.enableExpertParallel) return;
  const transport = resolveEpTransport(afd.epTransport, afd.connector);
  const info = TRANSPORTS[transport];
  if (info.memory === 'host') return;
  const path = ['afd', 'epTransport'];
  const named = afd.epTransport === 'auto' ? `epTransport auto (${transport} under connector ${afd.connector})` : `epTransport ${transport}`;
  const ffn = placements.filter((p) => p.role === 'ffn');
  const cpu = onCpu(ffn);
  if (info.needsCuda && cpu.length > 0) {
    ctx.addIssue({ code: 'custom', path, message: `${named} needs every FFN rank on a CUDA device (on cpu: ${cpu.join(', ')}); use epTransport tcp` });
  }
  const agents = [...new Set(ffn.map((p) => p.agentId))];
  if (info.oneHostOnly && agents.length > 1) {
    ctx.addIssue({ code: 'custom', path, message: `epTransport ${transport} (CUDA IPC) needs every FFN rank on one host (FFN ranks are on agents ${agents.join(', ')}); use epTransport nccl or tcp across hosts` });
  }
  if (info.gpuPerRank) {
    const seen = new Map<string, number>();
    for (const p of ffn.filter((q) => q.backend === 'cuda')) {
      const gpu = `${p.agentId} GPU ${p.deviceIndex}`;
      const other = seen.get(gpu);
      if (other !== undefined) {
        ctx.addIssue({ code: 'custom', path, message: `${named} needs every FFN rank on a GPU of its own (ffn ${other} and ffn ${p.rank} are both on ${gpu}); use epTransport peer for FFN ranks that share a host's GPUs` });
      } else {
        seen.set(gpu, p.rank);
      }
    }
  }
}

/** SM shares cap ranks under MPS only: asking for them with time slicing is a contradiction, refused. */
function checkSmShares(spec: { gpuSharing: GpuSharingConfig; placements: readonly RankPlacement[] }, ctx: z.RefinementCtx): void {
  if (spec.gpuSharing.mode !== 'time-slice') return;
  const roles = Object.entries(spec.gpuSharing.smShare).filter(([, v]) => v !== undefined).map(([role]) => role);
  const ranks = spec.placements.filter((p) => p.smShare !== undefined).map((p) => `${p.role} ${p.rank}`);
  if (roles.length + ranks.length === 0) return;
  const what = [...roles.map((r) => `role ${r}`), ...ranks].join(', ');
  ctx.addIssue({ code: 'custom', path: ['gpuSharing', 'smShare'], message: `SM shares (${what}) need MPS, but gpuSharing.mode is time-slice; use mode auto or mps, or drop the shares` });
}

/** A launch: AFD or colocated. Placements must cover each rank exactly once; the connector and epTransport fit them. */
export const launchSpecSchema = z.discriminatedUnion('mode', [afdLaunchSpecSchema, colocatedLaunchSpecSchema]).superRefine((spec, ctx) => {
  checkSmShares(spec, ctx);
  if (spec.mode === 'colocated') {
    checkPlacements(spec.placements, { colocated: spec.placements.length }, ctx);
    return;
  }
  // spec.topology is resolved by its field (this runs only when every field parsed).
  const prefill = prefillRanksOf(spec.topology);
  checkPlacements(spec.placements, { attention: spec.topology.attention.ranks, ffn: spec.topology.ffn.ranks, ...(prefill > 0 ? { prefill } : {}) }, ctx);
  checkConnector(spec.afd.connector, spec.topology, spec.placements, ctx);
  checkEpTransport(spec.afd, spec.placements, ctx);
});
export type LaunchSpec = z.output<typeof launchSpecSchema>;
/**
 * The configuration sections of a launch as input (each field optional, defaulted by the
 * schema): what the CLI's flags and --config, and the console's Topology screen, produce.
 */
export type LaunchConfigInput = { [K in keyof typeof common]?: z.input<(typeof common)[K]> };
export type LaunchSpecInput = z.input<typeof launchSpecSchema>;

/** Identifies a rank of the running topology. */
export const rankRefShape = {
  /** Role of the rank. */
  role: processRoleSchema,
  /** Rank within its role. */
  rank: rankIndex,
};
export const rankRefSchema = z.object(rankRefShape);
export type RankRef = z.infer<typeof rankRefSchema>;

/** Lifecycle of one rank process. */
export const rankLifecycleSchema = z.enum(['pending', 'starting', 'loading', 'rendezvous', 'warmup', 'ready', 'stopping', 'exited', 'failed']);
export type RankLifecycle = z.infer<typeof rankLifecycleSchema>;

/** What an agent knows about one of its rank processes. */
export const rankStateSchema = z.object({
  ...rankRefShape,
  /** Agent that runs the rank. */
  agentId: z.string(),
  /** Lifecycle state. */
  state: rankLifecycleSchema,
  /** OS process id; null before spawn. */
  pid: z.int().positive().nullable(),
  /** HTTP base URL of the rank once listening; null before. */
  apiUrl: z.string().nullable(),
  /** Latest startup progress; null when none was reported. */
  progress: z
    .object({
      /** Phase of the progress. */
      phase: rolePhaseSchema,
      /** Work done (bytes for loading). */
      bytesDone: z.number().nonnegative(),
      /** Total work; 0 when unknown. */
      bytesTotal: z.number().nonnegative(),
    })
    .nullable(),
  /** Exit code once exited/failed; null while running or when killed by a signal. */
  exitCode: z.int().nullable(),
  /** Why the rank failed (or other status detail); null when none. */
  message: z.string().nullable(),
  /** Times the agent restarted this rank (restart policy on-failure); absent when never. */
  restarts: z.int().min(0).optional(),
});
export type RankState = z.infer<typeof rankStateSchema>;

/** The topology as one agent sees it. */
export const topologyStateSchema = z.object({
  /** Id of the current launch; null when none was launched. */
  launchId: z.string().nullable(),
  /** idle: nothing launched; launching; running: every local rank ready; stopping; stopped; failed: a rank failed. */
  state: z.enum(['idle', 'launching', 'running', 'stopping', 'stopped', 'failed']),
  /** The launched spec; null when idle. */
  spec: launchSpecSchema.nullable(),
  /** This agent's ranks. */
  ranks: z.array(rankStateSchema),
  /** Front router URL when this agent hosts it; null otherwise. */
  routerUrl: z.string().nullable(),
  /** Whether this agent's front router requires a bearer API key; absent when it hosts none. */
  apiKeyRequired: z.boolean().optional(),
  /**
   * Why the launch failed when no single rank did (e.g. the front router could not bind
   * apiPort), or, while running, which ranks it is restarting; absent otherwise.
   */
  message: z.string().optional(),
  /** This agent's GPUs in the launch: which ranks each holds and how they share it (MPS or time slices); [] without CUDA ranks. */
  gpus: z.array(gpuShareStateSchema).default([]),
});
export type TopologyState = z.infer<typeof topologyStateSchema>;

/** One log line of a rank process. */
export const logLineSchema = z.object({
  /** When the agent read the line, Unix epoch milliseconds. */
  timestampMs: z.number().nonnegative(),
  /** Stream the line came from (stderr carries pino JSON logs). */
  stream: z.enum(['stdout', 'stderr']),
  /** Level of a pino line; null when the line is not a pino record. */
  level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).nullable(),
  /** The text (the pino `msg` for JSON logs, else the raw line). */
  text: z.string(),
});
export type LogLine = z.infer<typeof logLineSchema>;
