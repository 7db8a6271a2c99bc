/**
 * Two GPU hosts for real, on the CPU backend: namespaces host-a and host-b, each running
 * `afd-agent serve` on its own address with TLS (a throwaway CA) and its own token, and a
 * console namespace for clients (the launch CLI, the console, a browser, curl). Optionally
 * a delaying relay on the switch stands between the hosts on the AFD ports: each host
 * then resolves the other's name to the relay (the console still reaches the agents
 * directly). Used by the integration tests, the e2e spec and `afd-bench two-hosts`.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BedProcess } from './BedProcess.js';
import type { RelayDirection } from '../../bench/DelayRelay.js';
import { NetnsBed, SWITCH } from './NetnsBed.js';
import { makeTestPki, type TestPki } from './testPki.js';

/** The agents' port on every host. */
export const AGENT_PORT = 7700;
export const GPU_HOSTS = ['host-a', 'host-b'] as const;
export type GpuHost = (typeof GPU_HOSTS)[number];
export const CONSOLE = 'console';

export interface TwoHostBedOptions {
  /** afd-agent.cjs to run. */
  agentScript: string;
  /** afd-bench.cjs (its tcp-delay-relay subcommand is the relay). */
  benchScript: string;
  /** Environment added for every process (e.g. AFD_NATIVE_ADDON). */
  env?: NodeJS.ProcessEnv;
  /** Folder whose models/ every host shares (the built-in model is made there once). */
  modelsHome: string;
  /** Extra `serve` arguments for both agents. */
  serveArgs?: readonly string[];
}

/** A running relay: the delay can change while connections stay open. */
export interface RelayHandle {
  process: BedProcess;
  address: string;
  setDelayMs(ms: number): Promise<void>;
  /** Achieved delays since the last reset (see agent/src/bench/DelayRelay.ts, stats). */
  stats(reset?: boolean): Promise<{ chunks: number; meanDelayUs: number; maxDelayUs: number; delayMs: number }>;
}

export class TwoHostBed {
  readonly agents = new Map<GpuHost, BedProcess>();
  readonly tokenFiles = new Map<GpuHost, string>();
  readonly tokens = new Map<GpuHost, string>();
  /**
   * The launches' OpenAI API key (a front router off loopback needs one): $AFD_API_KEY of
   * every process the bed starts (agents, the launch CLI, the console).
   */
  readonly apiKey = randomBytes(24).toString('base64url');
  /** A curl header file (`-H @file`) with the key, so it is not on a command line. */
  readonly apiHeaderFile: string;

  private constructor(
    readonly bed: NetnsBed,
    readonly pki: TestPki,
    private readonly opts: TwoHostBedOptions,
  ) {
    this.apiHeaderFile = join(bed.dir, 'api-key.header');
    writeFileSync(this.apiHeaderFile, `Authorization: Bearer ${this.apiKey}\n`, { mode: 0o600 });
  }

  /** Builds the namespaces, the CA and tokens, and starts both agents; tears down on failure. */
  static async start(opts: TwoHostBedOptions): Promise<TwoHostBed> {
    const bed = await NetnsBed.create({ hosts: [...GPU_HOSTS, CONSOLE] });
    try {
      const pki = await makeTestPki(join(bed.dir, 'pki'), GPU_HOSTS.map((h) => ({ name: h, address: bed.address(h) })));
      const two = new TwoHostBed(bed, pki, opts);
      for (const host of GPU_HOSTS) {
        const token = randomBytes(32).toString('base64url');
        const file = join(bed.dir, `${host}.token`);
        writeFileSync(file, `${token}\n`, { mode: 0o600 });
        two.tokens.set(host, token);
        two.tokenFiles.set(host, file);
        const home = join(bed.dir, `home-${host}`);
        mkdirSync(home, { recursive: true, mode: 0o700 });
        mkdirSync(join(opts.modelsHome, 'models'), { recursive: true });
        symlinkSync(join(opts.modelsHome, 'models'), join(home, 'models'));
      }
      await Promise.all(GPU_HOSTS.map((h) => two.startAgent(h)));
      return two;
    } catch (e) {
      await bed.teardown().catch(() => undefined);
      throw e;
    }
  }

  /** The URL clients in the console namespace reach a host's agent at. */
  url(host: GpuHost): string {
    return `wss://${host}:${AGENT_PORT}`;
  }

  /** Environment of processes the bed runs on `host`. */
  envFor(host: string): NodeJS.ProcessEnv {
    // The bed's clients speak to the random tiny model (its token ids, its name), not the demo model.
    return { AFD_HOME: join(this.bed.dir, `home-${host}`), AFD_AGENT_SCRIPT: this.opts.agentScript, AFD_LOG_LEVEL: 'info', AFD_API_KEY: this.apiKey, AFD_DEMO_MODEL_DIR: 'none', ...this.opts.env };
  }

  /** Starts (or restarts) the agent of a host; resolves once it listens. */
  async startAgent(host: GpuHost, extraArgs: readonly string[] = []): Promise<BedProcess> {
    const cert = this.pki.hosts.get(host)!;
    const args = [
      this.opts.agentScript, 'serve',
      '--host', host, '--port', String(AGENT_PORT),
      '--tls-cert', cert.cert, '--tls-key', cert.key,
      '--token-file', this.tokenFiles.get(host)!,
      '--api-host', host, '--advertise-host', host,
      ...(this.opts.serveArgs ?? []), ...extraArgs,
    ];
    mkdirSync(join(this.bed.dir, `home-${host}`), { recursive: true });
    const p = this.bed.spawn(host, 'afd-agent serve', process.execPath, args, { env: this.envFor(host) });
    await p.waitForLine(/"type":"listening"/, 30_000, 'its listening line');
    this.agents.set(host, p);
    return p;
  }

  /** Runs a program in the console namespace (the launch CLI, the console, a client). */
  spawnInConsole(name: string, file: string, args: readonly string[], env: NodeJS.ProcessEnv = {}, opts: { stdin?: boolean; group?: boolean } = {}): BedProcess {
    return this.bed.spawn(CONSOLE, name, file, args, { env: { ...this.envFor(CONSOLE), ...env }, ...opts });
  }

  /**
   * Puts a delaying relay between the hosts on `ports`, in front of `target`: the other
   * host then reaches `target` by name through it. Connections opened before keep their path.
   */
  /** direction: which way the delay applies (DelayRelay; from-target delays only what `target` sends back). */
  async startRelay(target: GpuHost, ports: readonly number[], delayMs: number, direction: RelayDirection = 'both'): Promise<RelayHandle> {
    const address = this.bed.relayAddress(target);
    await this.bed.addSwitchAddress(address);
    // A link does not slow down when the machine is busy: the relay runs at a higher priority (root).
    const p = this.bed.spawn(SWITCH, `delay relay to ${target}`, 'nice', [
      '-n', '-10', process.execPath,
      this.opts.benchScript, 'tcp-delay-relay', '--listen', address, '--to', this.bed.address(target), '--ports', ports.join(','), '--delay-ms', String(delayMs), '--direction', direction,
    ], { env: this.opts.env ?? {}, stdin: true });
    await p.waitForLine(/"type":"listening"/, 20_000, 'its listening line');
    this.bed.routeVia(target, address, [CONSOLE]);
    const send = async (msg: object, reply: RegExp): Promise<string> => {
      const mark = p.mark();
      p.child.stdin!.write(`${JSON.stringify(msg)}\n`);
      return p.waitForLine(reply, 5000, `an answer to ${JSON.stringify(msg)}`, mark);
    };
    return {
      process: p,
      address,
      setDelayMs: async (ms) => void (await send({ delayMs: ms }, /"type":"delay"/)),
      stats: async (reset = false) => JSON.parse(await send({ stats: true, resetStats: reset }, /"type":"stats"/)) as Awaited<ReturnType<RelayHandle['stats']>>,
    };
  }

  async teardown(): Promise<void> {
    await this.bed.teardown();
  }
}
