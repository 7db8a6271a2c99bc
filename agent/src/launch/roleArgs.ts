/**
 * The command line of one rank's role process, built from a launch spec and a placement.
 * The agent starts its own binary (`afd-agent role <role> --rank-config <json>`) with an
 * argument vector: the rank's whole config, built here from the zod-validated spec and
 * validated again by the role with the same schema.
 */
import { prefillRanksOf, resolveEpTransport, resolveRankConfig, transportInfo, type AfdConfigInput, type LaunchSpec, type RankConfig, type RankPlacement } from '@afd/shared';
import type { ChildSpec } from './ChildProcessGroup.js';
import type { SelfCommand } from '../util/self.js';

/** What the agent decides for a rank beyond the spec. */
export interface RankContext {
  /** This agent's id (placements with it run here). */
  agentId: string;
  /** Base port of the FFN rendezvous (FFN rank f listens on afdPort + f). */
  afdPort: number;
  /** Base port of the prefill ranks' KV transfer (prefill rank p listens on pdPort + p); omitted = the spec's afd.pd.port. */
  pdPort?: number;
  /** Address the rank's HTTP server binds (loopback: only this agent and its router use it). */
  apiHost: string;
  /** CPU threads when the placement names none (spread the cores over local CPU ranks). */
  defaultThreads: number | undefined;
  /** Environment inherited by every role process. */
  baseEnv: NodeJS.ProcessEnv;
  /** Bearer key serving ranks require on /v1 (passed as AFD_API_KEY, never on the command line). */
  apiKey?: string;
  /**
   * Identity of this start of the topology, the same for every rank of it (AFD mode):
   * FFN ranks admit only attention ranks with the same id. Omitted = none.
   */
  rendezvousId?: string;
}

/** Host of the agent that runs a placement, as other hosts reach it. */
export function hostOfAgent(spec: LaunchSpec, agentId: string): string {
  return (spec.mode === 'afd' ? spec.agentHosts[agentId] : undefined) ?? '127.0.0.1';
}

/**
 * Whether a rank maps other ranks' GPU memory (the transport table's mapsOtherGpus): its
 * connector, or an FFN rank's expert exchange with expert parallelism.
 */
function mapsOtherGpus(spec: LaunchSpec, placement: RankPlacement): boolean {
  if (spec.mode !== 'afd') return false;
  const { afd } = spec;
  const exchange = placement.role === 'ffn' && afd.enableExpertParallel && transportInfo(resolveEpTransport(afd.epTransport, afd.connector)).mapsOtherGpus;
  return transportInfo(afd.connector).mapsOtherGpus || exchange;
}

/** The AFD section of a rank's config: the spec's options plus where this rank is and whom it meets. */
function afdSectionOf(spec: LaunchSpec, placement: RankPlacement, ctx: RankContext): AfdConfigInput {
  const { role, rank } = placement;
  if (spec.mode !== 'afd') return { ...spec.afd, role, rank };
  // The spec's topology is resolved; the rank's schema takes the resolved form as it is.
  const { topology } = spec;
  const hostsOf = (r: 'ffn' | 'prefill', count: number): string[] =>
    Array.from({ length: count }, (_, i) => {
      const p = spec.placements.find((q) => q.role === r && q.rank === i);
      return hostOfAgent(spec, p?.agentId ?? ctx.agentId);
    });
  const ffnHosts = hostsOf('ffn', topology.ffn.ranks);
  const prefillHosts = hostsOf('prefill', prefillRanksOf(topology));
  // An FFN or prefill rank's `host` is its own (what it binds by default); the others' is FFN rank 0's.
  const ownHost = role === 'ffn' ? ffnHosts[rank] : role === 'prefill' ? prefillHosts[rank] : ffnHosts[0];
  return {
    ...spec.afd,
    role,
    rank,
    topology,
    host: ownHost ?? '127.0.0.1',
    ffnHosts: new Set(ffnHosts).size > 1 ? ffnHosts : [],
    prefillHosts: prefillHosts.some((h) => h !== (ffnHosts[0] ?? '127.0.0.1')) ? prefillHosts : [],
    port: ctx.afdPort,
    pd: { ...spec.afd.pd, port: ctx.pdPort || spec.afd.pd.port },
    rendezvousId: ctx.rendezvousId ?? '',
  };
}

/**
 * The whole config of one placement's rank: the spec's sections (model, serving, afd, api) as
 * they are, plus what the agent decides for the rank (its place in the topology, the
 * rendezvous port and id, its device, threads and HTTP address). Validated by the same
 * schema the role process parses it with.
 */
export function rankConfigFor(spec: LaunchSpec, placement: RankPlacement, ctx: RankContext): RankConfig {
  const threads = placement.threads ?? (placement.backend === 'cpu' ? ctx.defaultThreads : undefined);
  return resolveRankConfig({
    afd: afdSectionOf(spec, placement, ctx),
    model: spec.model,
    serving: spec.serving,
    // A CUDA rank sees its GPU as device 0 (CUDA_VISIBLE_DEVICES, below).
    device: { backend: placement.backend, index: 0, threads: threads ?? 0 },
    // The launch's CORS; ephemeral port: the role reports the bound URL in its `listening` event.
    api: { ...spec.api, host: ctx.apiHost, port: 0 },
  });
}

/**
 * The `afd-agent role ...` invocation (file, argv, env) of one placement: its rank config
 * as one JSON argument (one argv element, never through a shell; the role parses it with
 * the same strict schema), the API key and the GPUs it sees in its environment.
 */
export function roleChildSpec(self: SelfCommand, spec: LaunchSpec, placement: RankPlacement, ctx: RankContext): ChildSpec {
  const config = rankConfigFor(spec, placement, ctx);
  const args = [...self.args, 'role', placement.role, '--rank-config', JSON.stringify(config)];
  const env: NodeJS.ProcessEnv = { ...ctx.baseEnv, AFD_SUPERVISED: '1' };
  if (ctx.apiKey && placement.role !== 'ffn') env['AFD_API_KEY'] = ctx.apiKey;
  if (placement.backend === 'cuda' && mapsOtherGpus(spec, placement)) {
    // A rank that maps the other ranks' GPU memory (CUDA IPC) sees the GPUs the launch uses
    // on this host; its own comes first (device 0, as when pinned: threads that never select
    // a device still use the rank's GPU).
    const used = [...new Set(spec.placements.filter((p) => p.agentId === placement.agentId && p.backend === 'cuda').map((p) => p.deviceIndex))].sort((a, b) => a - b);
    env['CUDA_VISIBLE_DEVICES'] = [placement.deviceIndex, ...used.filter((d) => d !== placement.deviceIndex)].join(',');
  } else if (placement.backend === 'cuda') {
    // Pin: the rank sees exactly its GPU, as device 0.
    env['CUDA_VISIBLE_DEVICES'] = String(placement.deviceIndex);
  } else {
    env['CUDA_VISIBLE_DEVICES'] = '';
  }
  return { file: self.file, args, env };
}
