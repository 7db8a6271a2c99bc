/**
 * The command line of one rank's role process, built from a launch spec and a placement.
 * The agent starts its own binary (`afd-agent role <role> ...`) with an argument vector;
 * every value here comes from a zod-validated spec and is checked again below, so no
 * argument can smuggle in another option.
 */
import type { LaunchSpec, RankPlacement } from '@afd/shared';
import type { ChildSpec } from './ChildProcessGroup.js';
import type { SelfCommand } from '../util/self.js';

/** What the agent decides for a rank beyond the spec. */
export interface RankContext {
  /** This agent's id (placements with it run here). */
  agentId: string;
  /** Base port of the FFN rendezvous (FFN rank f listens on afdPort + f). */
  afdPort: number;
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

const safeValue = /^[A-Za-z0-9_.:,/@+=\- ]*$/;

function checkValue(flag: string, value: string): string {
  if (value.startsWith('-') || !safeValue.test(value) || value.includes('\n')) {
    throw new Error(`refusing to pass ${flag} "${value}" to a role process: it starts with "-" or holds characters other than letters, digits and _.:,/@+=- and spaces`);
  }
  return value;
}

/** Host of the agent that runs a placement, as other hosts reach it. */
export function hostOfAgent(spec: LaunchSpec, agentId: string): string {
  return (spec.mode === 'afd' ? spec.agentHosts[agentId] : undefined) ?? '127.0.0.1';
}

/** The spec's serving limits as role flags: all of them for serving ranks, the step token budget for FFN ranks. */
function servingFlags(spec: LaunchSpec, placement: RankPlacement): [string, number][] {
  const s = spec.serving;
  const all: [string, number | undefined][] = [
    ['--max-num-batched-tokens', s.maxNumBatchedTokens],
    ...(placement.role === 'ffn'
      ? []
      : ([
          ['--max-num-seqs', s.maxNumSeqs],
          ['--max-model-len', s.maxModelLen],
          ['--max-queued-requests', s.maxQueuedRequests],
          ['--kv-cache-mib', s.kvCacheMib],
          ['--kv-memory-fraction', s.kvMemoryFraction],
        ] as [string, number | undefined][])),
  ];
  return all.filter((e): e is [string, number] => e[1] !== undefined);
}

/** Whether a rank maps other ranks' GPU memory: connector peer, or an FFN rank's expert exchange over epTransport peer. */
function mapsPeerMemory(spec: LaunchSpec, placement: RankPlacement): boolean {
  if (spec.mode !== 'afd') return false;
  return spec.afd.connector === 'peer' || (placement.role === 'ffn' && spec.afd.enableExpertParallel && spec.afd.epTransport === 'peer');
}

/** The `afd-agent role ...` invocation (file, argv, env) of one placement. */
export function roleChildSpec(self: SelfCommand, spec: LaunchSpec, placement: RankPlacement, ctx: RankContext): ChildSpec {
  const args = [...self.args, 'role', placement.role];
  const add = (flag: string, value: string | number): void => {
    args.push(flag, checkValue(flag, String(value)));
  };
  if (spec.modelDir !== null) add('--model', spec.modelDir);
  if (spec.loadFormat !== 'auto') add('--load-format', spec.loadFormat);
  if (spec.loadFormat === 'dummy') add('--seed', spec.seed);
  add('--rank', placement.rank);
  add('--backend', placement.backend);
  const env: NodeJS.ProcessEnv = { ...ctx.baseEnv, AFD_SUPERVISED: '1' };
  if (ctx.apiKey && placement.role !== 'ffn') env['AFD_API_KEY'] = ctx.apiKey;
  if (placement.backend === 'cuda' && mapsPeerMemory(spec, placement)) {
    // Connector peer (and an FFN rank's expert exchange over epTransport peer) maps the other
    // ranks' GPU memory through CUDA IPC, so the rank sees the GPUs the launch uses on this
    // host; its own comes first (device 0, as when pinned: threads that never select a
    // device still use the rank's GPU).
    const used = [...new Set(spec.placements.filter((p) => p.agentId === placement.agentId && p.backend === 'cuda').map((p) => p.deviceIndex))].sort((a, b) => a - b);
    env['CUDA_VISIBLE_DEVICES'] = [placement.deviceIndex, ...used.filter((d) => d !== placement.deviceIndex)].join(',');
    add('--device', 0);
  } else if (placement.backend === 'cuda') {
    // Pin: the rank sees exactly its GPU, as device 0.
    env['CUDA_VISIBLE_DEVICES'] = String(placement.deviceIndex);
    add('--device', 0);
  } else {
    env['CUDA_VISIBLE_DEVICES'] = '';
  }
  const threads = placement.threads ?? (placement.backend === 'cpu' ? ctx.defaultThreads : undefined);
  if (threads !== undefined) add('--threads', threads);
  for (const [flag, value] of servingFlags(spec, placement)) add(flag, value);
  add('--api-host', ctx.apiHost);
  add('--api-port', 0); // ephemeral: the role reports the bound URL in its `listening` event
  if (spec.mode === 'afd') {
    // The spec's topology is resolved; a role process gets its name on the command line and
    // parses it once, with the same schema (resolveRoleSettings).
    const topology = spec.topology;
    add('--topology', topology.name);
    const ffnHosts = Array.from({ length: topology.ffn.ranks }, (_, f) => {
      const p = spec.placements.find((q) => q.role === 'ffn' && q.rank === f);
      return hostOfAgent(spec, p?.agentId ?? ctx.agentId);
    });
    add('--afd-host', placement.role === 'ffn' ? (ffnHosts[placement.rank] ?? '127.0.0.1') : (ffnHosts[0] ?? '127.0.0.1'));
    if (new Set(ffnHosts).size > 1) add('--ffn-hosts', ffnHosts.join(','));
    add('--afd-port', ctx.afdPort);
    if (ctx.rendezvousId) add('--rendezvous-id', ctx.rendezvousId);
    const { port: _port, ...options } = spec.afd;
    // JSON of validated options, parsed by the role with the same schema; the role puts
    // ncclEnv into its environment itself before NCCL loads (applyNcclEnv).
    args.push('--config', JSON.stringify(options));
  }
  return { file: self.file, args, env };
}
