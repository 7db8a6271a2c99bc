/**
 * `afd-agent launch`: start a topology from the command line and keep it in the
 * foreground (see launch/headless.ts).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { AFD_CONNECTORS, LOAD_FORMATS, MAX_DUMMY_SEED } from '@afd/shared';
import { existsSync } from 'node:fs';
import { runHeadlessLaunch, type HeadlessOptions } from '../../launch/headless.js';
import { frontRouterFactory } from '../../launch/router.js';
import { ensureDefaultModel } from '../../role/defaultModel.js';
import { defaultTokenFile, loadOrCreateToken } from '../../daemon/tokenFile.js';
import { parseIntOption } from './cliOptions.js';

/** The CLI's flags: the headless options with --hosts optional and the token as a file. */
type LaunchCliOptions = Omit<HeadlessOptions, 'hosts' | 'token' | 'startRouter' | 'prepareDefaultModel'> & {
  hosts?: string[];
  tokenFile?: string;
};

function oneOf<T extends string>(flag: string, values: readonly T[]): (v: string) => T {
  return (v) => {
    if (!(values as readonly string[]).includes(v)) throw new InvalidArgumentError(`${flag} must be one of ${values.join(', ')} (got "${v}")`);
    return v as T;
  };
}

export function registerLaunch(program: Command): void {
  program
    .command('launch')
    .description('launch a topology on this host (and remote agents with --hosts), show progress, serve the OpenAI API; Ctrl-C stops it')
    .option('--topology <xAyF|colocated[:N]>', 'AFD topology, e.g. 2A2F, or colocated:N whole-model replicas', '1A1F')
    .option('--model <dir>', 'HF checkpoint directory (default: the built-in model: the demo model, else a random tiny one)')
    .option('--api-port <n>', 'port of the OpenAI-compatible front router (0 = ephemeral)', parseIntOption('--api-port', 0, 65535), 8000)
    .option('--api-host <addr>', 'address the front router binds', '127.0.0.1')
    .option('--backend <cpu|cuda>', 'compute backend (default: cuda when a GPU is visible)', oneOf('--backend', ['cpu', 'cuda'] as const))
    .option('--gpus <i,j,...>', 'CUDA devices of this host to use, one per rank (default: all)', (v: string) => v.split(',').map((x) => parseIntOption('--gpus', 0, 1023)(x)))
    .option('--threads <n>', 'CPU threads per rank (default: cores / CPU ranks)', parseIntOption('--threads', 1, 4096))
    .option('--dbo', 'dual-batch overlap (two stages per step)', false)
    .option('--gate-on-attention', 'run the MoE router on the attention ranks', false)
    .option('--connector <tcp|nccl|peer>', 'AFD data plane (default: nccl on cuda, tcp on cpu; peer = GPUs of one host through CUDA IPC)', oneOf('--connector', AFD_CONNECTORS))
    .option('--afd-port <n>', 'base port of the FFN rendezvous (FFN rank f listens on n + f)', parseIntOption('--afd-port', 1, 65535))
    .option('--hosts <list>', 'comma list of "local" and agent URLs (ws://host:7700); ranks are spread over them in world order', (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean))
    .option('--advertise-host <addr>', 'address remote hosts reach this one at (needed with remote --hosts)')
    .option('--token-file <file>', 'token of the remote agents (default $AFD_HOME/agent-token)')
    .option('--stop-grace-ms <n>', 'time ranks get to stop before SIGKILL', parseIntOption('--stop-grace-ms', 0, 600_000), 10_000)
    .option('--load-format <format>', 'weights: auto (the safetensors), safetensors, or dummy (random weights generated on each rank\'s device from --seed)', oneOf('--load-format', LOAD_FORMATS))
    .option('--seed <n>', 'seed of dummy weights (default 0)', parseIntOption('--seed', 0, MAX_DUMMY_SEED))
    .action(async (opts: LaunchCliOptions) => {
      if (opts.model && !existsSync(opts.model)) throw new Error(`--model ${opts.model} does not exist; pass an HF checkpoint directory, or omit --model for the built-in model`);
      const remote = (opts.hosts ?? []).some((h) => h !== 'local');
      const token = remote ? loadOrCreateToken(opts.tokenFile ?? defaultTokenFile()).token : undefined;
      const code = await runHeadlessLaunch({
        topology: opts.topology,
        ...(opts.model ? { model: opts.model } : {}),
        apiPort: opts.apiPort,
        apiHost: opts.apiHost,
        ...(opts.backend ? { backend: opts.backend } : {}),
        ...(opts.gpus ? { gpus: opts.gpus } : {}),
        ...(opts.threads ? { threads: opts.threads } : {}),
        dbo: opts.dbo,
        gateOnAttention: opts.gateOnAttention,
        ...(opts.connector ? { connector: opts.connector } : {}),
        ...(opts.afdPort ? { afdPort: opts.afdPort } : {}),
        ...(opts.loadFormat ? { loadFormat: opts.loadFormat } : {}),
        ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
        hosts: opts.hosts ?? [],
        ...(opts.advertiseHost ? { advertiseHost: opts.advertiseHost } : {}),
        ...(token ? { token } : {}),
        stopGraceMs: opts.stopGraceMs,
        startRouter: frontRouterFactory,
        prepareDefaultModel: ensureDefaultModel,
      });
      process.exit(code);
    });
}
