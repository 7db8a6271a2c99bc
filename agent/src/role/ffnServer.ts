/**
 * The FFN role's native server (the daemon loop: control payload, then per layer and stage
 * receive / compute / send). The AFD runtime provides the real opener; this file defines
 * what the role process needs from it.
 */
import type { RankConfig, RankStats, RolePhase } from '@afd/shared';

export interface FfnServerLike {
  /** Log line describing the loaded FFN half. */
  readonly description: string;
  stats(): RankStats;
  /**
   * Resolves with the reason when the loop ends on the shutdown flag of an attention rank
   * (or after close()); rejects with the reason when it ends any other way (e.g. the
   * rendezvous failed), so the role process exits non-zero and the agent reports a failure.
   */
  done: Promise<string>;
  /** Stops the loop and closes the connector. */
  close(): Promise<void>;
}

export interface OpenFfnServerRequest {
  modelDir: string;
  /** The FFN rank's whole config. */
  config: RankConfig;
  onProgress: (phase: RolePhase, done: number, total: number, message?: string) => void;
  onPeerState: (problem: string | null) => void;
}

export type FfnServerOpener = (req: OpenFfnServerRequest) => Promise<FfnServerLike>;

/** Used until the AFD runtime's native FFN server is available in this build. */
export const unavailableFfnServer: FfnServerOpener = async () => {
  throw new Error('the ffn role needs the AFD runtime (native FFN server), which this build does not include yet; run the colocated role instead');
};
