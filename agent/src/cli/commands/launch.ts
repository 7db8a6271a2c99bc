/**
 * `afd-agent launch`: start a topology from the command line and keep it in the
 * foreground (see launch/headless.ts).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { afdOptionsSchema, fieldIssues, formatIssues, mergeConfigInput, type AfdOptionsInput, type LaunchConfigInput } from '@afd/shared';
import { CLI_PLACEMENTS, type CliPlacement } from '../../launch/cliSpec.js';
import { configInputFromFlags, registerConfigFlags } from '../configFlags.js';
import { existsSync, readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { runHeadlessLaunch } from '../../launch/headless.js';
import { frontRouterFactory } from '../../launch/router.js';
import { prepareDefaultModel } from '../../model/defaultModel.js';
import { defaultTokenFile, loadOrCreateToken } from '../../daemon/tokenFile.js';
import { checkRouterBindPolicy } from '../../daemon/bindPolicy.js';
import { parseIntOption } from './cliOptions.js';
import { agentEnv } from '../../util/env.js';

/** The launch-only flags (the config flags are read by configInputFromFlags). */
interface LaunchCliOptions {
  topology: string;
  apiPort?: number;
  apiHost: string;
  apiKey?: string;
  backend?: 'cpu' | 'cuda';
  gpus?: number[];
  threads?: number;
  restart?: 'on-failure' | 'never';
  maxRestarts?: number;
  hosts?: string[];
  placement?: CliPlacement;
  advertiseHost?: string;
  tokenFile: string[];
  caFile?: string;
  config?: string;
  stopGraceMs: number;
}

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

/** --config: the launch's AFD options (the spec's afd section) as a JSON object or a JSON file, checked by the same schema. */
function readAfdOptions(value: string): AfdOptionsInput {
  let text = value;
  if (!value.trimStart().startsWith('{')) {
    try {
      text = readFileSync(value, 'utf8');
    } catch (err) {
      throw new Error(`--config ${value}: cannot read the file (${(err as Error).message}); pass a JSON object or a JSON file path`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`--config: not valid JSON (${(err as Error).message})`);
  }
  const r = afdOptionsSchema.safeParse(parsed);
  if (!r.success) throw new Error(`--config: ${formatIssues(fieldIssues(r.error))}`);
  return parsed as AfdOptionsInput;
}

/** The launch's config sections: --config, the config flags on top, and the launch-only ones that land in the spec. */
export function launchConfigOf(opts: LaunchCliOptions & Record<string, unknown>): LaunchConfigInput {
  const flags = configInputFromFlags(opts, 'launch') as LaunchConfigInput;
  const fromFile: LaunchConfigInput = opts.config ? { afd: readAfdOptions(opts.config) } : {};
  const launchOnly: LaunchConfigInput = { apiPort: opts.apiPort, restart: { policy: opts.restart, maxRestarts: opts.maxRestarts } };
  return mergeConfigInput(mergeConfigInput(fromFile, flags), launchOnly);
}

export function registerLaunch(program: Command): void {
  const cmd = program
    .command('launch')
    .description('launch a topology on this host (and remote agents with --hosts), show progress, serve the OpenAI API; a dead rank is restarted; Ctrl-C drains and stops it')
    .option('--topology <xAyF|wPxAyF|colocated[:N]>', 'AFD topology, e.g. 2A2F; 2P1A1F adds 2 prefill ranks (prefill/decode disaggregation); or colocated:N whole-model replicas', '1A1F')
    .option('--api-port <n>', 'port of the OpenAI-compatible front router (0 = ephemeral; default 8000)', parseIntOption('--api-port', 0, 65535))
    .option('--api-host <addr>', 'address the front router binds (non-loopback needs --api-key)', '127.0.0.1')
    .option('--api-key <key>', 'require "Authorization: Bearer <key>" on the OpenAI API (default: $AFD_API_KEY, else open)')
    .option('--backend <cpu|cuda>', 'compute backend (default: cuda when a GPU is visible)', oneOf('--backend', ['cpu', 'cuda'] as const))
    .option('--gpus <i,j,...>', 'CUDA devices of this host, handed to its ranks round-robin in world order (FFN ranks first); fewer GPUs than ranks, or a GPU listed twice (0,0), puts several ranks on one GPU, run under CUDA MPS (see --gpu-sharing) (default: all)', (v: string) => v.split(',').map((x) => parseIntOption('--gpus', 0, 1023)(x)))
    .option('--threads <n>', 'CPU threads per rank (default: cores / CPU ranks)', parseIntOption('--threads', 1, 4096))
    .option('--config <file|json>', 'AFD options of every rank (the launch spec\'s afd section, shared schema: dbo thresholds, cudaGraph, ncclEnv ...); explicit flags override its fields')
    .option('--restart <on-failure|never>', 'a rank that dies: restart it with exponential back-off (1 s, 2 s ... 30 s), or end the launch (default on-failure)', oneOf('--restart', ['on-failure', 'never'] as const))
    .option('--max-restarts <n>', 'restarts of one rank in a row (a minute ready starts the count again) before the launch gives up (default 10)', parseIntOption('--max-restarts', 0, 1000))
    .option('--hosts <list>', 'comma list of "local" and agent URLs (wss://host:7700); ranks are spread over them (see --placement)', (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean))
    .option('--placement <world|block>', 'world: contiguous chunks of F0..Fy-1, A0..Ax-1 per host (FFN and attention ranks apart); block: each FFN rank with its attention ranks on one host', oneOf('--placement', CLI_PLACEMENTS))
    .option('--advertise-host <addr>', 'address remote hosts reach this one at (needed with remote --hosts)')
    .option('--token-file <file>', 'token of the remote agents: once for all, or once per remote host in --hosts order (default $AFD_HOME/agent-token)', (v: string, acc: string[]) => [...acc, v], [])
    .option('--ca-file <file>', 'PEM of the CA that signed the wss:// agents\' certificates, trusted besides the system CAs')
    .option('--stop-grace-ms <n>', 'on Ctrl-C / SIGTERM: time in-flight requests get to finish (then they end with an error event), ranks stop in parallel within it', parseIntOption('--stop-grace-ms', 0, 600_000), 10_000);
  registerConfigFlags(cmd, 'launch');
  cmd
    .action(async (opts: LaunchCliOptions & Record<string, unknown>) => {
      const config = launchConfigOf(opts);
      const model = config.model?.dir;
      if (model && !existsSync(model)) throw new Error(`--model ${opts['model'] as string} does not exist; pass an HF checkpoint directory, or omit --model for the built-in model`);
      const apiKey = opts.apiKey ?? agentEnv().apiKey;
      checkRouterBindPolicy(opts.apiHost, apiKey);
      const tokens = remoteTokens(opts.hosts ?? [], opts.tokenFile, readRemoteToken);
      const ca = opts.caFile ? readCaFile(opts.caFile) : undefined;
      const code = await runHeadlessLaunch({
        topology: opts.topology,
        config,
        apiHost: opts.apiHost,
        apiKey,
        backend: opts.backend,
        gpus: opts.gpus,
        threads: opts.threads,
        hosts: opts.hosts ?? [],
        advertiseHost: opts.advertiseHost,
        tokens,
        ca,
        placement: opts.placement,
        stopGraceMs: opts.stopGraceMs,
        startRouter: frontRouterFactory,
        prepareDefaultModel,
      });
      process.exit(code);
    });
}
