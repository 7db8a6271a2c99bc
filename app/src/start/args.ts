/** Command line of `npm start` (app/dist/start.cjs), shared with the Electron main process. */
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { parseArgs } from 'node:util';
import type { BootOptions } from '../service/boot.js';
import type { ConsoleServiceOptions } from '../service/ConsoleService.js';
import { findAgentScript } from '../service/EmbeddedAgent.js';
import { agentEnv } from '@afd/agent/env';

export interface StartOptions {
  /** Browser mode instead of Electron. */
  web: boolean;
  /** Web host port (0 = any free); null = DEFAULT_WEB_PORT, or any free port when it is taken. */
  port: number | null;
  /** Open Chromium in app mode (browser mode). */
  open: boolean;
  /** Launch the default topology at start. */
  launch: boolean;
  /** Start the local agent (off: an empty console; add agents by hand). */
  agent: boolean;
  topology: string;
  backend: 'auto' | 'cpu' | 'cuda';
  modelDir: string | null;
  apiPort: number;
  /** PEM of the CA the console trusts for wss:// agents (besides the system CAs); null = the system CAs only. */
  caFile: string | null;
  /** API key of the launches and the Playground (--api-key, else $AFD_API_KEY); null = none. */
  apiKey: string | null;
  help: boolean;
}

/**
 * Browser mode's usual port: the page's origin, and so the browser storage that keeps its
 * chats and settings, stays the same from one start to the next.
 */
export const DEFAULT_WEB_PORT = 7780;

export const START_USAGE = `Usage: npm start -- [options]

Starts the AFD console with a local agent and the built-in model launched as 1A1F.

  --web               browser mode: serve the console on loopback and open Chromium (also the
                      fallback when Electron cannot start)
  --port N            browser-mode port (default ${DEFAULT_WEB_PORT}, or any free port when it is taken;
                      0 = any free port). Chats and settings are kept per port (browser storage)
  --no-open           do not open a browser window; just print the URL
  --no-launch         start the agent but launch nothing
  --no-agent          start no local agent (add remote agents on the Agents screen)
  --topology T        default launch: xAyF (default 1A1F) or "colocated"
  --backend B         auto | cpu | cuda (default auto: CUDA when the agent sees a GPU)
  --model DIR         HF checkpoint directory (default: the built-in model: the demo model, else a random tiny one)
  --api-port N        port of the topology's OpenAI API (default 0 = any free port)
  --ca-file F         PEM of the CA that signed the agents' TLS certificates (wss:// agents
                      with a private CA)
  --api-key K         key of the launches' OpenAI API (default $AFD_API_KEY): agents need one
                      for a front router off loopback; the Playground sends it
  -h, --help          this help`;

function int(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number from 0 to 65535 (got "${v}")`);
  return n;
}

export function parseStartArgs(argv: readonly string[]): StartOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        web: { type: 'boolean', default: false },
        port: { type: 'string' },
        open: { type: 'boolean', default: true },
        'no-open': { type: 'boolean', default: false },
        launch: { type: 'boolean', default: true },
        'no-launch': { type: 'boolean', default: false },
        'no-agent': { type: 'boolean', default: false },
        topology: { type: 'string', default: '1A1F' },
        backend: { type: 'string', default: 'auto' },
        model: { type: 'string' },
        'api-port': { type: 'string' },
        'ca-file': { type: 'string' },
        'api-key': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw new Error(`${(e as Error).message}\n\n${START_USAGE}`);
  }
  const backend = values.backend ?? 'auto';
  if (backend !== 'auto' && backend !== 'cpu' && backend !== 'cuda') throw new Error(`--backend must be auto, cpu or cuda (got "${backend}")`);
  const topology = values.topology ?? '1A1F';
  if (topology !== 'colocated' && !/^\d+A\d+F$/i.test(topology)) throw new Error(`--topology must be xAyF (e.g. 1A1F) or "colocated" (got "${topology}")`);
  return {
    web: values.web ?? false,
    port: values.port === undefined ? null : int('--port', values.port, 0),
    open: (values.open ?? true) && !values['no-open'],
    launch: (values.launch ?? true) && !values['no-launch'] && !values['no-agent'],
    agent: !values['no-agent'],
    topology: topology.toUpperCase() === 'COLOCATED' ? 'colocated' : topology.toUpperCase(),
    backend,
    modelDir: values.model ?? null,
    apiPort: int('--api-port', values['api-port'], 0),
    caFile: values['ca-file'] ?? null,
    apiKey: values['api-key'] ?? agentEnv().apiKey ?? null,
    help: values.help ?? false,
  };
}

/** The console boot of these options (both `npm start` modes and the Electron main process). */
export function startBootOptions(opts: StartOptions, fromDir: string, say: (line: string) => void): BootOptions {
  return {
    agentScript: opts.agent ? findAgentScript(fromDir) : '',
    agent: opts.agent,
    launch: opts.launch,
    topology: opts.topology,
    backend: opts.backend,
    modelDir: opts.modelDir,
    apiPort: opts.apiPort,
    say,
  };
}

/** The console service's options from these options: the trusted CA read from --ca-file, the API key. */
export function consoleServiceOptions(opts: StartOptions, log: (message: string) => void): ConsoleServiceOptions {
  const key = opts.apiKey ? { apiKey: opts.apiKey } : {};
  if (!opts.caFile) return { log, ...key };
  let pem: Buffer;
  try {
    pem = readFileSync(opts.caFile);
  } catch (e) {
    throw new Error(`--ca-file ${opts.caFile} cannot be read (${(e as Error).message}): pass the PEM file of the CA that signed the agents' certificates`);
  }
  if (!pem.toString('utf8').includes('-----BEGIN CERTIFICATE-----')) throw new Error(`--ca-file ${opts.caFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  // Trusted in addition to the system CAs, so public agents still verify.
  return { log, ...key, ca: [...rootCertificates, pem.toString('utf8')] };
}
