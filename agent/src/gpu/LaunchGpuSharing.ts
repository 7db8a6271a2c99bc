/**
 * One launch's GPU sharing on this agent: before its ranks start, MPS for the GPUs that
 * hold several of its ranks (acquired from the host's MpsHost under mode auto or mps), or
 * the driver's time slicing with a warning; the environment each rank starts with; a check
 * of the daemon before ranks on MPS-shared GPUs are restarted; and the release of the
 * daemon when the launch ends.
 */
import { gpuGroups, type GpuGroup, type GpuShareState, type GpuSharingMode, type LaunchSpec, type RankPlacement } from '@afd/shared';
import { effectiveSharingMode, gpuShareStates, groupsText, sharingEnv, timeSliceWarning, type SharingOutcome } from './gpuSharingPlan.js';
import type { MpsHost, MpsLease } from './MpsHost.js';
import { MpsServerWatch, type MpsServerLoss } from './MpsServerWatch.js';

export interface LaunchGpuSharingOptions {
  spec: LaunchSpec;
  agentId: string;
  /** The agent's own mode (`serve --gpu-sharing`), used when the spec says auto. */
  agentMode: GpuSharingMode;
  /** The host's MPS; undefined = MPS cannot be had here. */
  mps: MpsHost | undefined;
  /** Notes for the agent's log (the launch's warnings and what it did with the daemon). */
  onNote?: (message: string) => void;
  /** An MPS server of the launch's daemon died: its client ranks hang, so the launch restarts those started before `lastAliveMs`. */
  onServerLost?: (loss: MpsServerLoss, message: string) => void;
  /** How often the daemon's servers are checked, ms (default 2000). */
  serverWatchMs?: number;
}

export class LaunchGpuSharing {
  private states: GpuShareState[] = [];
  private lease: MpsLease | null = null;
  private watch: MpsServerWatch | null = null;

  constructor(private readonly opts: LaunchGpuSharingOptions) {}

  /** This agent's GPUs in the launch and how each is shared (after start). */
  get gpus(): GpuShareState[] {
    return this.states;
  }

  private note(message: string | null): void {
    if (message) this.opts.onNote?.(message);
  }

  /** Decides every GPU's sharing, starting or joining MPS where needed; throws when mode mps cannot be had. */
  async start(): Promise<void> {
    const { spec, agentId } = this.opts;
    const groups = gpuGroups(spec.placements.filter((p) => p.agentId === agentId));
    const shared = groups.filter((g) => g.placements.length > 1);
    const shares = spec.gpuSharing.smShare;
    if (shared.length === 0) {
      this.states = gpuShareStates(groups, shares, { mps: null, timeSliceReason: 'one rank per GPU' });
      return;
    }
    const mode = effectiveSharingMode(spec.gpuSharing.mode, this.opts.agentMode);
    let outcome: SharingOutcome;
    if (mode === 'time-slice') {
      const who = spec.gpuSharing.mode === 'time-slice' ? 'the launch asks for gpuSharing time-slice' : 'this agent runs with --gpu-sharing time-slice';
      outcome = { mps: null, timeSliceReason: who };
    } else {
      try {
        if (!this.opts.mps) throw new Error('this agent has no MPS support configured');
        this.lease = await this.opts.mps.acquire();
        const how = this.lease.started ? 'started' : this.lease.managedByAgent ? 'joined the agents\'' : 'reusing the';
        this.note(`${groupsText(shared)}: ranks share ${shared.length > 1 ? 'these GPUs' : 'the GPU'} under CUDA MPS (${how} control daemon on ${this.lease.pipeDirectory})`);
        outcome = { mps: { pipeDirectory: this.lease.pipeDirectory } };
      } catch (e) {
        if (mode === 'mps') throw new Error(`gpuSharing mps: ${groupsText(shared)} need MPS, but ${(e as Error).message}`);
        outcome = { mps: null, timeSliceReason: `MPS could not be started: ${(e as Error).message}` };
      }
    }
    this.states = gpuShareStates(groups, shares, outcome);
    if (outcome.mps) this.watchServers(shared);
    if (spec.serving.kvCacheMib === null && shared.some((g) => g.placements.some((p) => p.role !== 'ffn'))) {
      // Each rank sizes its KV cache from the device memory free when it loads, which the other ranks' weights may still need.
      this.note(`ranks sharing a GPU size their KV caches from the memory free when each loads; if one runs out of memory, give --kv-cache-mib (serving.kvCacheMib) to leave room for the others`);
    }
    if (!outcome.mps) {
      const sharesAsked = Object.values(shares).some((v) => v !== undefined) || spec.placements.some((p) => p.agentId === agentId && p.smShare !== undefined);
      this.note(timeSliceWarning(shared, outcome.timeSliceReason, mode === 'time-slice', sharesAsked));
    }
  }

  private watchServers(shared: readonly GpuGroup[]): void {
    const mps = this.opts.mps;
    if (!mps || !this.opts.onServerLost) return;
    const onServerLost = this.opts.onServerLost;
    this.watch = new MpsServerWatch({
      listServers: () => mps.serverPids(),
      intervalMs: this.opts.serverWatchMs,
      onLost: (loss) => {
        void mps.failureContext().catch(() => null).then((context) => {
          const who = loss.pids.length > 1 ? `MPS servers (pids ${loss.pids.join(', ')})` : `MPS server (pid ${loss.pids[0]})`;
          onServerLost(loss, `the ${who} of ${groupsText(shared)} exited; ranks that were its clients hang on it instead of failing, so they are stopped${context ? ` (${context})` : ''}`);
        });
      },
    });
    this.watch.start();
  }

  /** What `placement`'s rank adds to the agent's environment (the MPS pipe directory and SM share on an MPS-shared GPU). */
  envFor(placement: Pick<RankPlacement, 'role' | 'rank'>): Record<string, string> {
    return sharingEnv(this.states, placement, this.lease?.pipeDirectory ?? null);
  }

  /** After a rank on an MPS-shared GPU failed: what MPS says (a daemon that no longer answers, its server's last log lines), in the log. */
  async afterFailure(placement: Pick<RankPlacement, 'role' | 'rank'>): Promise<void> {
    if (!this.lease || !this.opts.mps || !('CUDA_MPS_PIPE_DIRECTORY' in this.envFor(placement))) return;
    const context = await this.opts.mps.failureContext().catch(() => null);
    if (context) this.note(`${placement.role} rank ${placement.rank} failed on a GPU shared under MPS: ${context}`);
  }

  /** Before a rank on an MPS-shared GPU starts again: the daemon must answer (the agents' own is started again if it died). */
  async beforeRestart(placement: Pick<RankPlacement, 'role' | 'rank'>): Promise<void> {
    if (!this.lease || !this.opts.mps || !('CUDA_MPS_PIPE_DIRECTORY' in this.envFor(placement))) return;
    try {
      this.note(await this.opts.mps.ensureRunning());
    } catch (e) {
      this.note(`the MPS control daemon is gone and could not be started again: ${(e as Error).message}; the restarted ${placement.role} rank ${placement.rank} runs without MPS`);
    }
  }

  /** Lets go of the daemon (the last user of the agents' own quits it). */
  async stop(): Promise<void> {
    this.watch?.stop(); // quitting the daemon ends its servers: not a loss
    this.watch = null;
    if (!this.lease || !this.opts.mps) return;
    this.lease = null;
    try {
      this.note(await this.opts.mps.release());
    } catch (e) {
      this.note(`could not release the MPS control daemon: ${(e as Error).message}`);
    }
  }
}
