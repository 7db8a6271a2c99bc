/**
 * `afd-agent launch`: start a topology from the command line and keep it in the
 * foreground (see launch/headless.ts).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { AFD_CONNECTORS, EP_TRANSPORTS, LOAD_FORMATS, MAX_DUMMY_SEED, type RankServingOptions } from '@afd/shared';
import { CLI_PLACEMENTS } from '../../launch/cliSpec.js';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { rootCertificates } from 'node:tls';
import { runHeadlessLaunch, type HeadlessOptions } from '../../launch/headless.js';
import { frontRouterFactory } from '../../launch/router.js';
import { prepareDefaultModel } from '../../model/defaultModel.js';
import { defaultTokenFile, loadOrCreateToken } from '../../daemon/tokenFile.js';
import { checkRouterBindPolicy } from '../../daemon/bindPolicy.js';
import { parseIntOption } from './cliOptions.js';

/** The CLI's flags: the headless options with --hosts optional, the tokens and the CA as files, the serving limits flat. */
type LaunchCliOptions = Omit<HeadlessOptions, 'hosts' | 'tokens' | 'ca' | 'startRouter' | 'prepareDefaultModel' | 'serving'> &
  RankServingOptions & {
    hosts?: string[];
    tokenFile: string[];
    caFile?: string;
  };

/**
 * The token of each remote host, in --hosts order: no --token-file = $AFD_HOME/agent-token
 * for all, one file = the same token for all, else exactly one file per remote host.
 */
export function remoteTokens(hosts: readonly string[], tokenFiles: readonly string[], load: (file: string) => string): string[] {
  const remote = hosts.filter((h) => h !== 'local');
  if (remote.length === 0) return [];
  if (tokenFiles.length > 1 && tokenFiles.length !== remote.length) {
    throw new Error(`--token-file is given ${tokenFiles.length} times for ${remote.length} remote --hosts: give one file (the same token on every agent) or one per remote host, in --hosts order`);
  }
  const files = tokenFiles.length === 0 ? [defaultTokenFile()] : tokenFiles;
  return remote.map((_, i) => load(files[Math.min(i, files.length - 1)]!));
}

/** A remote agent's token, from a copy of its token file (never created here: a made-up token only earns a 401). */
function readRemoteToken(file: string): string {
  if (!existsSync(file)) throw new Error(`--token-file ${file} does not exist: copy the remote agent's token file ($AFD_HOME/agent-token on its host)`);
  return loadOrCreateToken(file).token;
}

/** The CAs a wss:// connection trusts with --ca-file: the system CAs and the file's. */
function readCaFile(file: string): string[] {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`--ca-file ${file} cannot be read (${(e as Error).message}): pass the PEM file of the CA that signed the agents' certificates`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`--ca-file ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return [...rootCertificates, pem];
}

function oneOf<T extends string>(flag: string, values: readonly T[]): (v: string) => T {
  return (v) => {
    if (!(values as readonly string[]).includes(v)) throw new InvalidArgumentError(`${flag} must be one of ${values.join(', ')} (got "${v}")`);
    return v as T;
  };
}

function fraction(flag: string): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0 || n > 0.99) throw new InvalidArgumentError(`${flag} must be a number in (0, 0.99], got "${v}"`);
    return n;
  };
}

/** The serving limits given on the command line (the role flags of the same names). */
function servingOf(o: LaunchCliOptions): RankServingOptions {
  const keys = ['maxNumSeqs', 'maxNumBatchedTokens', 'maxModelLen', 'maxQueuedRequests', 'kvCacheMib', 'kvMemoryFraction'] as const;
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
}

export function registerLaunch(program: Command): void {
  program
    .command('launch')
    .description('launch a topology on this host (and remote agents with --hosts), show progress, serve the OpenAI API; a dead rank is restarted; Ctrl-C drains and stops it')
    .option('--topology <xAyF|colocated[:N]>', 'AFD topology, e.g. 2A2F, or colocated:N whole-model replicas', '1A1F')
    .option('--model <dir>', 'HF checkpoint directory (default: the built-in model: the demo model, else a random tiny one); a relative path is resolved against this directory')
    .option('--api-port <n>', 'port of the OpenAI-compatible front router (0 = ephemeral)', parseIntOption('--api-port', 0, 65535), 8000)
    .option('--api-host <addr>', 'address the front router binds (non-loopback needs --api-key)', '127.0.0.1')
    .option('--api-key <key>', 'require "Authorization: Bearer <key>" on the OpenAI API (default: $AFD_API_KEY, else open)')
    .option('--backend <cpu|cuda>', 'compute backend (default: cuda when a GPU is visible)', oneOf('--backend', ['cpu', 'cuda'] as const))
    .option('--gpus <i,j,...>', 'CUDA devices of this host to use, one per rank (default: all)', (v: string) => v.split(',').map((x) => parseIntOption('--gpus', 0, 1023)(x)))
    .option('--threads <n>', 'CPU threads per rank (default: cores / CPU ranks)', parseIntOption('--threads', 1, 4096))
    .option('--dbo', 'dual-batch overlap (two stages per step)', false)
    .option('--gate-on-attention', 'run the MoE router on the attention ranks', false)
    .option('--connector <tcp|nccl|peer>', 'AFD data plane (default: nccl on cuda, tcp on cpu; peer = GPUs of one host through CUDA IPC)', oneOf('--connector', AFD_CONNECTORS))
    .option('--afd-port <n>', 'base port of the FFN rendezvous (FFN rank f listens on n + f)', parseIntOption('--afd-port', 1, 65535))
    .option('--max-num-seqs <n>', 'most sequences per step of each rank (role default 64)', parseIntOption('--max-num-seqs', 1, 1 << 20))
    .option('--max-num-batched-tokens <n>', 'token budget per step of each rank (role default 2048)', parseIntOption('--max-num-batched-tokens', 1, 1 << 24))
    .option('--max-model-len <n>', 'context window cap (default: the model config)', parseIntOption('--max-model-len', 2, 1 << 24))
    .option('--max-queued-requests <n>', 'waiting requests per rank beyond this get 429 (role default 1024)', parseIntOption('--max-queued-requests', 0, 1 << 24))
    .option('--kv-cache-mib <n>', 'KV cache size per rank in MiB (CPU default 256)', parseIntOption('--kv-cache-mib', 1, 1 << 24))
    .option('--kv-memory-fraction <f>', 'CUDA: share of the free device memory for the KV cache (default 0.9)', fraction('--kv-memory-fraction'))
    .option('--restart <on-failure|never>', 'a rank that dies: restart it with exponential back-off (1 s, 2 s ... 30 s), or end the launch', oneOf('--restart', ['on-failure', 'never'] as const), 'on-failure')
    .option('--max-restarts <n>', 'restarts of one rank in a row (a minute ready starts the count again) before the launch gives up', parseIntOption('--max-restarts', 0, 1000), 10)
    .option('--enable-expert-parallel', 'split the MoE experts over the FFN ranks (each holds 1/y of them; they exchange tokens every MoE layer)', false)
    .option('--ep-transport <auto|tcp|peer|nccl>', 'with --enable-expert-parallel, the FFN ranks\' exchange: tcp (host memory, any hosts; eager FFN steps), peer (GPU memory through CUDA IPC: CUDA FFN ranks of one host), nccl (GPU memory over NCCL: CUDA FFN ranks on GPUs of their own, any hosts) or auto (peer under --connector peer with the FFN ranks on one host, nccl under --connector nccl, else tcp); peer and nccl keep FFN steps CUDA graphs (default auto)', oneOf('--ep-transport', EP_TRANSPORTS))
    .option('--hosts <list>', 'comma list of "local" and agent URLs (wss://host:7700); ranks are spread over them (see --placement)', (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean))
    .option('--placement <world|block>', 'world: contiguous chunks of F0..Fy-1, A0..Ax-1 per host (FFN and attention ranks apart); block: each FFN rank with its attention ranks on one host', oneOf('--placement', CLI_PLACEMENTS))
    .option('--advertise-host <addr>', 'address remote hosts reach this one at (needed with remote --hosts)')
    .option('--token-file <file>', 'token of the remote agents: once for all, or once per remote host in --hosts order (default $AFD_HOME/agent-token)', (v: string, acc: string[]) => [...acc, v], [])
    .option('--ca-file <file>', 'PEM of the CA that signed the wss:// agents\' certificates, trusted besides the system CAs')
    .option('--step-deadline-ms <n>', 'a step that waits longer than this for a peer fails, naming the peer (default 5000)', parseIntOption('--step-deadline-ms', 1, 3_600_000))
    .option('--stop-grace-ms <n>', 'on Ctrl-C / SIGTERM: time in-flight requests get to finish (then they end with an error event), ranks stop in parallel within it', parseIntOption('--stop-grace-ms', 0, 600_000), 10_000)
    .option('--load-format <format>', 'weights: auto (the safetensors), safetensors, or dummy (random weights generated on each rank\'s device from --seed)', oneOf('--load-format', LOAD_FORMATS))
    .option('--seed <n>', 'seed of dummy weights (default 0)', parseIntOption('--seed', 0, MAX_DUMMY_SEED))
    .action(async (opts: LaunchCliOptions) => {
      const model = opts.model === undefined ? undefined : resolve(opts.model);
      if (model && !existsSync(model)) throw new Error(`--model ${opts.model} does not exist; pass an HF checkpoint directory, or omit --model for the built-in model`);
      const apiKey = opts.apiKey ?? (process.env['AFD_API_KEY'] || undefined);
      checkRouterBindPolicy(opts.apiHost, apiKey);
      const tokens = remoteTokens(opts.hosts ?? [], opts.tokenFile, readRemoteToken);
      const ca = opts.caFile ? readCaFile(opts.caFile) : undefined;
      const code = await runHeadlessLaunch({
        topology: opts.topology,
        ...(model ? { model } : {}),
        apiPort: opts.apiPort,
        apiHost: opts.apiHost,
        ...(apiKey ? { apiKey } : {}),
        ...(opts.backend ? { backend: opts.backend } : {}),
        ...(opts.gpus ? { gpus: opts.gpus } : {}),
        ...(opts.threads ? { threads: opts.threads } : {}),
        dbo: opts.dbo,
        gateOnAttention: opts.gateOnAttention,
        ...(opts.enableExpertParallel ? { enableExpertParallel: true } : {}),
        ...(opts.epTransport ? { epTransport: opts.epTransport } : {}),
        ...(opts.connector ? { connector: opts.connector } : {}),
        ...(opts.afdPort ? { afdPort: opts.afdPort } : {}),
        restart: opts.restart ?? 'on-failure',
        maxRestarts: opts.maxRestarts ?? 10,
        serving: servingOf(opts),
        ...(opts.loadFormat ? { loadFormat: opts.loadFormat } : {}),
        ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
        hosts: opts.hosts ?? [],
        ...(opts.advertiseHost ? { advertiseHost: opts.advertiseHost } : {}),
        tokens,
        ...(ca ? { ca } : {}),
        ...(opts.placement ? { placement: opts.placement } : {}),
        ...(opts.stepDeadlineMs ? { stepDeadlineMs: opts.stepDeadlineMs } : {}),
        stopGraceMs: opts.stopGraceMs,
        startRouter: frontRouterFactory,
        prepareDefaultModel,
      });
      process.exit(code);
    });
}
