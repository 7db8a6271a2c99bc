/**
 * `afd-agent serve`: the host daemon. Prints one JSON line on stdout once listening
 * ({"type":"listening","url":...,"tokenFile":...}); logs go to stderr. The token is read
 * from (or generated into) the token file and never printed in full.
 */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { GPU_SHARING_MODES, type GpuSharingMode } from '@afd/shared';
import { AgentServer } from '../../daemon/AgentServer.js';
import { InventorySource } from '../../daemon/inventory.js';
import { LaunchManager } from '../../daemon/LaunchManager.js';
import { advertisedHostOf } from '../../daemon/advertiseHost.js';
import { defaultTokenFile, loadOrCreateToken, maskToken } from '../../daemon/tokenFile.js';
import { killAllGroupsNow } from '../../launch/ChildProcessGroup.js';
import { whenSupervisorGone } from '../../launch/parentWatch.js';
import { frontRouterFactory } from '../../launch/router.js';
import { prepareDefaultModel } from '../../model/defaultModel.js';
import { createLogger } from '../../util/logger.js';
import { selfCommand } from '../../util/self.js';
import { agentVersion, parseIntOption } from './cliOptions.js';

interface ServeOptions {
  host: string;
  port: number;
  tlsCert?: string;
  tlsKey?: string;
  tokenFile?: string;
  allowOrigin: string[];
  maxMessageBytes?: number;
  heartbeatMs: number;
  stopGraceMs: number;
  apiHost: string;
  advertiseHost?: string;
  gpuSharing: GpuSharingMode;
}

export async function serve(opts: ServeOptions): Promise<void> {
  const log = createLogger('agent');
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined)) {
    throw new Error('--tls-cert and --tls-key go together: give both (PEM files) or neither');
  }
  const advertiseHost = advertisedHostOf(opts);
  const token = loadOrCreateToken(opts.tokenFile ?? defaultTokenFile());
  const tls = opts.tlsCert && opts.tlsKey ? { cert: readFileSync(opts.tlsCert), key: readFileSync(opts.tlsKey) } : undefined;
  const manager = new LaunchManager({
    self: selfCommand(),
    startRouter: frontRouterFactory,
    prepareDefaultModel,
    routerHost: opts.apiHost,
    advertiseHost: advertiseHost ?? undefined,
    gpuSharing: opts.gpuSharing,
    onNote: (m) => log.info(m),
  });
  const server = new AgentServer({
    host: opts.host,
    port: opts.port,
    token: token.token,
    tls,
    allowedOrigins: opts.allowOrigin,
    maxMessageBytes: opts.maxMessageBytes,
    heartbeatMs: opts.heartbeatMs,
    agentVersion: agentVersion(),
    manager,
    inventory: new InventorySource(agentVersion(), undefined, undefined, undefined, advertiseHost, () => manager.mps.status()),
    logger: log,
  });
  const url = await server.start();
  log.info({ url, tokenFile: token.path, token: maskToken(token.token), created: token.created, advertiseHost }, `agent listening on ${url}; clients authenticate with the token in ${token.path}`);
  process.stdout.write(`${JSON.stringify({ type: 'listening', url, tokenFile: token.path })}\n`);

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) {
      log.warn(`${signal} again: killing every rank now`);
      killAllGroupsNow();
      process.exit(1);
    }
    stopping = true;
    log.info(`${signal}: stopping ranks and closing`);
    void manager
      .stop(opts.stopGraceMs)
      .then(() => server.close())
      .catch((e: unknown) => log.error({ err: e }, 'shutdown failed'))
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Started by a console with AFD_SUPERVISED=1: stop every rank and exit when it is gone.
  whenSupervisorGone(() => shutdown('supervisor gone'));
}

function gpuSharingMode(value: string): GpuSharingMode {
  if (!(GPU_SHARING_MODES as readonly string[]).includes(value)) throw new InvalidArgumentError(`--gpu-sharing must be one of ${GPU_SHARING_MODES.join(', ')} (got "${value}")`);
  return value as GpuSharingMode;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the host daemon: a token-authenticated WebSocket API that lists devices and launches/stops role processes')
    .option('--host <addr>', 'address to bind (non-loopback needs --tls-cert/--tls-key)', '127.0.0.1')
    .option('--port <n>', 'port to bind (0 = ephemeral)', parseIntOption('--port', 0, 65535), 7700)
    .option('--tls-cert <file>', 'PEM certificate: serve wss://')
    .option('--tls-key <file>', 'PEM private key of --tls-cert')
    .option('--token-file <file>', 'token file, created with mode 0600 when missing (default $AFD_HOME/agent-token)')
    .option('--allow-origin <origin>', 'browser Origin allowed to connect (repeatable), e.g. http://127.0.0.1:5173', (v: string, acc: string[]) => [...acc, v], [])
    .option('--max-message-bytes <n>', 'largest request frame accepted', parseIntOption('--max-message-bytes', 1024, 64 << 20))
    .option('--heartbeat-ms <n>', 'ping interval; clients missing a pong are dropped', parseIntOption('--heartbeat-ms', 100, 600_000), 15_000)
    .option('--api-host <addr>', 'address the front router of a launch binds (its port is the launch spec\'s apiPort)', '127.0.0.1')
    .option('--stop-grace-ms <n>', 'on shutdown, time ranks get before SIGKILL', parseIntOption('--stop-grace-ms', 0, 600_000), 10_000)
    .option('--advertise-host <addr>', 'address other hosts reach this one at (reported to clients for the ranks\' rendezvous; default: --host when it names one non-loopback interface)')
    .option('--gpu-sharing <auto|mps|time-slice>', 'ranks of a launch on one GPU, when the launch says auto: auto = under CUDA MPS (this agent starts nvidia-cuda-mps-control -d, or reuses a running daemon) where it can, else time-sliced with a warning; mps = MPS or the launch fails; time-slice = never start MPS', gpuSharingMode, 'auto')
    .action((opts: ServeOptions) => serve(opts));
}
