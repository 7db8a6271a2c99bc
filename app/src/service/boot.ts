/**
 * What `npm start` does once the console shows: start the local agent, connect the
 * console to it, and launch the built-in model as 1A1F (GPU when the agent has one,
 * else CPU) so the Playground is ready to chat. Shared by Electron main and browser mode.
 */
import type { AgentInfo, BridgePush, LaunchSpecInput } from '@afd/shared';
import type { ConsoleService } from './ConsoleService.js';
import { startEmbeddedAgent, type EmbeddedAgent } from './EmbeddedAgent.js';

/** Agent id of the embedded agent in placements. */
export const LOCAL_AGENT_ID = 'local';

export interface BootOptions {
  agentScript: string;
  /** Start the local agent (default true); without it the console starts empty. */
  agent?: boolean;
  /** Launch the default topology right away (default true). */
  launch?: boolean;
  /** Topology of the default launch (default 1A1F); "colocated" for a single whole-model rank. */
  topology?: string;
  backend?: 'auto' | 'cpu' | 'cuda';
  /** null = the built-in model. */
  modelDir?: string | null;
  /** API port of the launch (0 = ephemeral). */
  apiPort?: number;
  tokenFile?: string;
  env?: NodeJS.ProcessEnv;
  /** One line per step for the terminal. */
  say?: (line: string) => void;
  /** Agent stderr lines. */
  onAgentLog?: (line: string) => void;
}

/**
 * The hosts' handle on the boot. Created with the service before the UI is up; `start`
 * runs once the UI shows; `shutdown` works at any time: before, during or after `start`,
 * whether boot succeeded or not.
 */
export interface ConsoleBoot {
  /**
   * Starts the local agent and the default launch. Rejects with what went wrong; the
   * service then keeps running (pushes included) without a local agent.
   */
  start(opts: BootOptions): Promise<void>;
  /** Waits for a boot in progress, stops chats and the topology, closes connections, then stops the local agent. */
  shutdown(): Promise<void>;
}

/** Picks the backend: CUDA when asked or (auto) when the agent sees a GPU. */
export function chooseBackend(inventory: AgentInfo['inventory'], wanted: 'auto' | 'cpu' | 'cuda'): 'cpu' | 'cuda' {
  const gpus = inventory?.devices.filter((d) => d.kind === 'cuda').length ?? 0;
  if (wanted === 'cuda' && gpus === 0) throw new Error('--backend cuda was asked for, but the local agent sees no CUDA device');
  if (wanted === 'auto') return gpus > 0 ? 'cuda' : 'cpu';
  return wanted;
}

/** `npm start` keeps its launch serving: a rank that dies is restarted by its agent (with back-off). */
const ON_FAILURE = { policy: 'on-failure' } as const;

/** The default launch: every rank of `topology` on the local agent, GPUs round-robin. */
export function defaultLaunchSpec(topology: string, backend: 'cpu' | 'cuda', numGpus: number, modelDir: string | null, apiPort: number): LaunchSpecInput {
  if (topology === 'colocated') {
    return { mode: 'colocated', placements: [{ role: 'colocated', rank: 0, agentId: LOCAL_AGENT_ID, backend, deviceIndex: 0 }], model: { dir: modelDir }, apiPort, restart: ON_FAILURE };
  }
  const m = /^(\d+)A(\d+)F$/i.exec(topology);
  if (!m) throw new Error(`--topology ${topology} is not xAyF (e.g. 1A1F) or "colocated"`);
  const x = Number(m[1]);
  const y = Number(m[2]);
  const placements: LaunchSpecInput['placements'] = [];
  let slot = 0;
  const next = (): number => (backend === 'cuda' && numGpus > 0 ? slot++ % numGpus : 0);
  for (let f = 0; f < y; f++) placements.push({ role: 'ffn', rank: f, agentId: LOCAL_AGENT_ID, backend, deviceIndex: next() });
  for (let a = 0; a < x; a++) placements.push({ role: 'attention', rank: a, agentId: LOCAL_AGENT_ID, backend, deviceIndex: next() });
  // Ranks that share a GPU (more ranks than GPUs) run under CUDA MPS, which the agent starts
  // (gpuSharing auto); over CUDA IPC their layer crossings stay on the device.
  const shared = backend === 'cuda' && x + y > numGpus;
  return { mode: 'afd', topology: `${x}A${y}F`, placements, model: { dir: modelDir }, apiPort, restart: ON_FAILURE, ...(shared ? { afd: { connector: 'peer' } } : {}) };
}

/**
 * Tells the terminal when a launch is ready or failed: one line per launch and outcome
 * (a failure once, however many ranks report it). Returns whether `launchId` was
 * announced as failed, so a rejected launch call is not said a second time.
 */
export function announceLaunches(service: ConsoleService, say: (line: string) => void): { failed(launchId: string): boolean; stop(): void } {
  const said = new Set<string>();
  const stop = service.subscribe((channel, payload) => {
    if (channel !== 'launch.progress') return;
    const p = payload as BridgePush<'launch.progress'>;
    const key = `${p.launchId}:${p.state}`;
    if ((p.state !== 'running' && p.state !== 'failed') || said.has(key)) return;
    said.add(key);
    say(p.state === 'running' ? `ready: chat in the console, or use the OpenAI API at ${p.routerUrl}/v1` : `launch failed: ${p.message}`);
  });
  return { failed: (launchId) => said.has(`${launchId}:failed`), stop };
}

/** The boot of `service`: see ConsoleBoot. */
export function consoleBoot(service: ConsoleService): ConsoleBoot {
  let booting: Promise<EmbeddedAgent | null> | null = null;
  let shutDown = false;
  return {
    start(opts) {
      if (shutDown) return Promise.reject(new Error('the console is shutting down'));
      if (booting) return Promise.reject(new Error('console bug: boot started twice'));
      booting = bootLocalAgent(opts, service, announceLaunches(service, opts.say ?? (() => undefined)));
      return booting.then(() => undefined);
    },
    async shutdown() {
      shutDown = true;
      // A failed boot has already stopped its agent.
      const agent = booting ? await booting.catch(() => null) : null;
      await service.dispose({ stopTopology: true });
      await agent?.stop();
    },
  };
}

/**
 * Starts the local agent, adds it to `service` and sends the default launch. On failure
 * it undoes only what it did (the agent it added and spawned), so the service stays usable.
 */
async function bootLocalAgent(opts: BootOptions, service: ConsoleService, announced: ReturnType<typeof announceLaunches>): Promise<EmbeddedAgent | null> {
  const say = opts.say ?? (() => undefined);
  if (opts.agent === false) return null;
  const agent = await startEmbeddedAgent({
    script: opts.agentScript,
    tokenFile: opts.tokenFile,
    env: opts.env,
    onLog: opts.onAgentLog,
  });
  say(`local agent listening on ${agent.url} (token file ${agent.tokenFile})`);
  let added = false;
  try {
    const info = await service.addAgent(agent.url, agent.token, LOCAL_AGENT_ID);
    added = true;
    if (opts.launch !== false) {
      const backend = chooseBackend(info.inventory, opts.backend ?? 'auto');
      const gpus = info.inventory?.devices.filter((d) => d.kind === 'cuda').length ?? 0;
      const topology = opts.topology ?? '1A1F';
      const spec = defaultLaunchSpec(topology, backend, gpus, opts.modelDir ?? null, opts.apiPort ?? 0);
      say(`launching ${topology} with ${opts.modelDir ?? 'the built-in model'} on ${backend === 'cuda' ? `CUDA (${gpus} GPU${gpus === 1 ? '' : 's'})` : 'the CPU'}`);
      // Progress goes to the UI; a failure is announced once (the progress push says it first).
      service.call('topology.launch', spec).catch((e: Error) => {
        const launchId = service.currentLaunch()?.launchId;
        if (!launchId || !announced.failed(launchId)) say(e.message);
      });
    }
    return agent;
  } catch (e) {
    if (added) service.removeAgent(LOCAL_AGENT_ID);
    await agent.stop();
    throw e;
  }
}
