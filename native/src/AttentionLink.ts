/**
 * AttentionLink: joins an attention-role Engine to its FFN rank over the AFD connector
 * (native runtime/afd/attention-link.h). Once connected, every engine.step() runs its FFN
 * half on the FFN rank; a lost FFN rank is redialed in the background (state() says so).
 *
 *   const link = new AttentionLink(engine, resolveRankConfig({ afd: { role: 'attention', topology, rank, port } }));
 *   await link.connect();
 *   ...engine.step(plan)...
 *   await link.close({ shutdown: true });   // tells the FFN rank's loop to stop
 */
import type { RankConfig } from '@afd/shared';
import type { AttentionLinkState, NativeAttentionLink } from './addon.js';
import { engineAddonOf, nativeEngineOf, type Engine } from './engine.js';

export class AttentionLink {
  private readonly native: NativeAttentionLink;

  /** Throws when the engine is not a loaded attention-role engine or the config is invalid. */
  constructor(engine: Engine, config: RankConfig) {
    this.native = new (engineAddonOf(engine).AttentionLink)(nativeEngineOf(engine), config);
  }

  /** Rendezvous with the FFN rank (retries until rendezvousTimeoutMs), then routes the engine's FFN half to it. */
  connect(): Promise<void> {
    return this.native.connect();
  }

  /** Detaches and closes; with shutdown (default true) the FFN rank's loop is told to stop. */
  close(options?: { shutdown?: boolean; reason?: string }): Promise<void> {
    return this.native.close(options);
  }

  /** Where the link stands: connecting, connected, lost (reconnecting) or closed, with the peer and the last error. */
  state(): AttentionLinkState {
    return this.native.state();
  }
}
