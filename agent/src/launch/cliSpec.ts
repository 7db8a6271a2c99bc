/**
 * Builds the launch spec of `afd-agent launch` from its flags: rank placement over hosts
 * and, on CUDA, the GPUs of each host round-robin (one per rank when there are enough;
 * a host with fewer GPUs than ranks puts several on one, and its agent runs them under
 * CUDA MPS: see gpuSharing). Placement `world` (the default) gives each
 * host a contiguous chunk of the world order [F0..F(y-1), A0..A(x-1), P0..P(w-1)], so FFN ranks and
 * attention ranks land on different hosts and every layer crosses between them; `block`
 * keeps each block (an FFN rank and the attention ranks it serves) on one host and spreads
 * whole blocks over the hosts. Pure, so every rule is unit-tested.
 */
import { attentionBlockOf, defaultConnectorFor, prefillRanksOf, launchSpecSchema, mergeConfigInput, resolveTopology, sharedGpuGroups, type AfdConnector, type LaunchConfigInput, type LaunchSpec, type LaunchSpecInput, type ProcessRole, type RankPlacement, type Topology } from '@afd/shared';

/** How `launch` spreads ranks over --hosts. */
export const CLI_PLACEMENTS = ['world', 'block'] as const;
export type CliPlacement = (typeof CLI_PLACEMENTS)[number];

export interface CliHost {
  /** Agent id used in placements ("local" for this process). */
  agentId: string;
  /** Address other hosts reach this host at (rendezvous host of its FFN ranks). */
  address: string;
  /** CUDA devices available on the host (indices), when known. */
  gpus: number[];
}

export interface CliLaunchInput {
  /** "xAyF" (or "wPxAyF" with w prefill ranks), or "colocated" / "colocated:N" for N whole-model replicas. */
  topology: string;
  backend: 'cpu' | 'cuda';
  hosts: CliHost[];
  /** CPU threads of every rank; omitted = cores / CPU ranks of a host. */
  threads?: number;
  /** Rank placement over hosts (default world). */
  placement?: CliPlacement;
  /**
   * The config sections the flags and --config gave (model, serving, afd, restart, apiPort);
   * the launch spec's schema defaults the rest. Two CLI policies: the connector defaults to
   * the backend's (defaultConnectorFor), and a dead rank is restarted (on-failure) unless told.
   */
  config: LaunchConfigInput;
}

/** One rank in world order. */
interface Slot {
  role: ProcessRole;
  rank: number;
}

/** Ranks in world order, each with the group it moves with under placement `block` (its block; a replica for colocated). */
type Slots = { list: Slot[]; groups: number[]; numGroups: number; name: string } & (
  | { mode: 'colocated'; topology?: undefined }
  /** topology: the --topology flag resolved; the spec carries it on. */
  | { mode: 'afd'; topology: Topology }
);

/** Ranks in world order from the --topology flag, which is resolved here, once. */
function slots(topology: string): Slots {
  const col = /^colocated(?::(\d+))?$/i.exec(topology.trim());
  if (col) {
    const n = col[1] ? Number(col[1]) : 1;
    if (n < 1) throw new Error('colocated:N needs N >= 1 replicas');
    const list = Array.from({ length: n }, (_, r) => ({ role: 'colocated' as const, rank: r }));
    return { mode: 'colocated', name: `colocated x${n}`, list, groups: list.map((s) => s.rank), numGroups: n };
  }
  const t = resolveTopology(topology);
  const list: Slot[] = [];
  const groups: number[] = [];
  for (let f = 0; f < t.ffn.ranks; f++) {
    list.push({ role: 'ffn', rank: f });
    groups.push(f);
  }
  const blockOf = new Map<number, number>();
  for (let f = 0; f < t.ffn.ranks; f++) {
    const b = attentionBlockOf(t, f);
    for (let a = b.start; a < b.start + b.size; a++) blockOf.set(a, f);
  }
  for (let a = 0; a < t.attention.ranks; a++) {
    list.push({ role: 'attention', rank: a });
    groups.push(blockOf.get(a) ?? 0);
  }
  // Prefill ranks (wPxAyF) come last; under --placement block, prefill rank p joins block p mod y.
  for (let p = 0; p < prefillRanksOf(t); p++) {
    list.push({ role: 'prefill', rank: p });
    groups.push(p % t.ffn.ranks);
  }
  return { mode: 'afd', list, groups, numGroups: t.ffn.ranks, name: t.name, topology: t };
}

/** Host index of every slot: contiguous chunks of the world order, or of whole groups (blocks). */
function hostIndices(list: readonly Slot[], groups: readonly number[], numGroups: number, numHosts: number, placement: CliPlacement, name: string): number[] {
  if (placement === 'world') {
    const perHost = Math.ceil(list.length / numHosts);
    return list.map((_, i) => Math.min(Math.floor(i / perHost), numHosts - 1));
  }
  if (numGroups < numHosts) {
    throw new Error(`--placement block keeps each block (an FFN rank and its attention ranks) on one host: ${name} has ${numGroups} block(s) for ${numHosts} hosts; give at most ${numGroups} --hosts, or use --placement world`);
  }
  const perHost = Math.ceil(numGroups / numHosts);
  return groups.map((g) => Math.min(Math.floor(g / perHost), numHosts - 1));
}

/**
 * The connector when none is given: the backend's (nccl on CUDA), except peer where ranks
 * of one host share GPUs: NCCL refuses two ranks of one communicator on one GPU, and CUDA
 * IPC is the quickest on one host anyway.
 */
function cliDefaultConnector(backend: 'cpu' | 'cuda', placements: readonly RankPlacement[], multiHost: boolean): AfdConnector {
  if (backend === 'cuda' && !multiHost && sharedGpuGroups(placements).length > 0) return 'peer';
  return defaultConnectorFor(backend);
}

/** The spec every host launches from, validated by the shared schema. */
export function buildCliLaunchSpec(input: CliLaunchInput): LaunchSpec {
  if (input.hosts.length === 0) throw new Error('no hosts to launch on');
  const { mode, list, groups, numGroups, name, topology } = slots(input.topology);
  const hostOf = hostIndices(list, groups, numGroups, input.hosts.length, input.placement ?? 'world', name);
  const used = new Map<string, number>();
  const placements = list.map((slot, i) => {
    const host = input.hosts[hostOf[i]!]!;
    const k = used.get(host.agentId) ?? 0;
    used.set(host.agentId, k + 1);
    let deviceIndex = 0;
    if (input.backend === 'cuda') {
      if (host.gpus.length === 0) throw new Error(`host ${host.agentId} has no GPU for its ranks; use --backend cpu, or other --hosts`);
      // Round-robin: with fewer GPUs than ranks, several share one (under MPS, gpuSharing).
      deviceIndex = host.gpus[k % host.gpus.length]!;
    }
    return { role: slot.role, rank: slot.rank, agentId: host.agentId, backend: input.backend, deviceIndex, threads: input.threads };
  });
  const multiHost = new Set(placements.map((p) => p.agentId)).size > 1;
  const { config } = input;
  const common = mergeConfigInput<LaunchConfigInput>({ restart: { policy: 'on-failure' } }, config);
  const spec: LaunchSpecInput =
    mode === 'colocated'
      ? { mode, placements, ...common }
      : {
          mode,
          topology,
          placements,
          ...common,
          agentHosts: multiHost ? Object.fromEntries(input.hosts.map((h) => [h.agentId, h.address])) : {},
          afd: mergeConfigInput({ connector: cliDefaultConnector(input.backend, placements, multiHost) }, config.afd ?? {}),
        };
  const parsed = launchSpecSchema.safeParse(spec);
  if (!parsed.success) throw new Error(`invalid launch: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}
