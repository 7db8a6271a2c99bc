/**
 * FfnServer: the FFN role's daemon loop around an ffn-role Engine (native
 * runtime/afd/ffn-loop.h, a native thread). The constructor binds the rendezvous port at
 * once; start() gathers the block of attention ranks; the loop then serves their FFN
 * halves until an attention rank sends the shutdown flag or stop() is called.
 *
 *   const server = new FfnServer(engine, resolveRankConfig({ afd: { role: 'ffn', topology, rank, port } }));
 *   await server.start();
 *   const reason = await server.wait();   // "shutdown requested by attention rank 0 ..."
 */
import type { RankConfig, RankStats } from '@afd/shared';
import type { FfnServerState, NativeExpertStats, NativeFfnServer } from './addon.js';
import { engineAddonOf, nativeEngineOf, type Engine } from './engine.js';

export class FfnServer {
  private readonly native: NativeFfnServer;
  /** This FFN rank (config.afd.rank). */
  private readonly rank: number;

  /** Throws when the engine is not a loaded ffn-role engine, the config is invalid or the port is busy. */
  constructor(
    private readonly engine: Engine,
    config: RankConfig,
  ) {
    this.native = new (engineAddonOf(engine).FfnServer)(nativeEngineOf(engine), config);
    this.rank = config.afd.rank;
  }

  /** Starts the loop; resolves once every attention peer of the block joined, rejects on rendezvous timeout. */
  start(): Promise<void> {
    return this.native.start();
  }

  /** Resolves with the exit reason when the loop ends (shutdown flag from an attention rank, stop()). */
  wait(): Promise<string> {
    return this.native.wait();
  }

  /** Ends the loop (peers see a goodbye) and joins the thread. */
  stop(): Promise<void> {
    return this.native.stop();
  }

  /** Where the loop stands: rendezvous, serving, stopped or failed, with the peers and the listen address. */
  state(): FfnServerState {
    return this.native.state();
  }

  /** The port the server listens on (the one bound for basePort 0 included). */
  listenPort(): number {
    return Number(this.state().listenAddress.split(':').at(-1));
  }

  /** Expert-parallel counters; null when expert parallelism is off. */
  expertStats(): NativeExpertStats | null {
    return this.native.expertStats();
  }

  /** The engine's counters in the RankStats shape, with this rank's experts and their exchange. */
  rankStats(rank = this.rank): RankStats {
    return this.engine.rankStats(rank, this.expertStats());
  }
}
