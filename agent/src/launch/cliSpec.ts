/**
 * Builds the launch spec of `afd-agent launch` from its flags: rank placement over hosts
 * (contiguous chunks of the world order [F0..F(y-1), A0..A(x-1)]) and, on CUDA, one GPU
 * per rank of each host. Pure, so every rule is unit-tested.
 */
import { launchSpecSchema, resolveTopology, type AfdConnector, type LaunchSpec, type LaunchSpecInput, type LoadFormat, type ProcessRole } from '@afd/shared';

export interface CliHost {
  /** Agent id used in placements ("local" for this process). */
  agentId: string;
  /** Address other hosts reach this host at (rendezvous host of its FFN ranks). */
  address: string;
  /** CUDA devices available on the host (indices), when known. */
  gpus: number[];
}

export interface CliLaunchInput {
  /** "xAyF", or "colocated" / "colocated:N" for N whole-model replicas. */
  topology: string;
  modelDir: string | null;
  apiPort: number;
  backend: 'cpu' | 'cuda';
  hosts: CliHost[];
  threads?: number;
  dbo: boolean;
  gateOnAttention: boolean;
  connector?: AfdConnector;
  afdPort?: number;
  /** Where the weights come from (default auto); dummy generates them from `seed`. */
  loadFormat?: LoadFormat;
  seed?: number;
}

/** One rank in world order. */
interface Slot {
  role: ProcessRole;
  rank: number;
}

function slots(topology: string): { mode: 'afd' | 'colocated'; list: Slot[]; name: string } {
  const col = /^colocated(?::(\d+))?$/i.exec(topology.trim());
  if (col) {
    const n = col[1] ? Number(col[1]) : 1;
    if (n < 1) throw new Error('colocated:N needs N >= 1 replicas');
    return { mode: 'colocated', name: `colocated x${n}`, list: Array.from({ length: n }, (_, r) => ({ role: 'colocated' as const, rank: r })) };
  }
  const t = resolveTopology(topology);
  const list: Slot[] = [];
  for (let f = 0; f < t.ffn.ranks; f++) list.push({ role: 'ffn', rank: f });
  for (let a = 0; a < t.attention.ranks; a++) list.push({ role: 'attention', rank: a });
  return { mode: 'afd', list, name: t.name };
}

/** The spec every host launches from, validated by the shared schema. */
export function buildCliLaunchSpec(input: CliLaunchInput): LaunchSpec {
  if (input.hosts.length === 0) throw new Error('no hosts to launch on');
  const { mode, list } = slots(input.topology);
  const perHost = Math.ceil(list.length / input.hosts.length);
  const used = new Map<string, number>();
  const placements = list.map((slot, i) => {
    const host = input.hosts[Math.min(Math.floor(i / perHost), input.hosts.length - 1)]!;
    const k = used.get(host.agentId) ?? 0;
    used.set(host.agentId, k + 1);
    let deviceIndex = 0;
    if (input.backend === 'cuda') {
      const gpu = host.gpus[k];
      if (gpu === undefined) {
        const need = list.filter((_, j) => Math.min(Math.floor(j / perHost), input.hosts.length - 1) === input.hosts.indexOf(host)).length;
        throw new Error(
          `host ${host.agentId} needs ${need} GPUs for its ranks but has ${host.gpus.length} (${host.gpus.join(', ') || 'none'}); ` +
            'use --backend cpu, a smaller topology, or more --hosts',
        );
      }
      deviceIndex = gpu;
    }
    return { role: slot.role, rank: slot.rank, agentId: host.agentId, backend: input.backend, deviceIndex, ...(input.threads ? { threads: input.threads } : {}) };
  });
  const multiHost = new Set(placements.map((p) => p.agentId)).size > 1;
  const weights = { ...(input.loadFormat ? { loadFormat: input.loadFormat } : {}), ...(input.seed !== undefined ? { seed: input.seed } : {}) };
  const spec: LaunchSpecInput =
    mode === 'colocated'
      ? { mode, placements, modelDir: input.modelDir, apiPort: input.apiPort, ...weights }
      : {
          mode,
          topology: input.topology,
          placements,
          modelDir: input.modelDir,
          apiPort: input.apiPort,
          ...weights,
          agentHosts: multiHost ? Object.fromEntries(input.hosts.map((h) => [h.agentId, h.address])) : {},
          afd: {
            connector: input.connector ?? (input.backend === 'cuda' ? 'nccl' : 'tcp'),
            dbo: { enabled: input.dbo },
            computeGateOnAttention: input.gateOnAttention,
            ...(input.afdPort ? { port: input.afdPort } : {}),
          },
        };
  const parsed = launchSpecSchema.safeParse(spec);
  if (!parsed.success) throw new Error(`invalid launch: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}
