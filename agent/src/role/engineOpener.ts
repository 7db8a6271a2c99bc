/**
 * How a role process gets its engine. The role passes its rank config (the shared schema's
 * one object) and a progress callback; the opener returns the engine
 * behind the small EngineLike interface. Tests inject a fake opener.
 */
import type { RankConfig, RolePhase } from '@afd/shared';
import type { EngineLike } from '../serving/engineLike.js';

export interface OpenEngineRequest {
  /** The checkpoint directory (the built-in model's when config.model.dir is null). */
  modelDir: string;
  role: 'colocated' | 'attention';
  /** The rank's whole config: model source, device, serving limits, AFD options. */
  config: RankConfig;
  onProgress: (phase: RolePhase, done: number, total: number, message?: string) => void;
  /** Called when the engine loses (message) or regains (null) an FFN peer. */
  onPeerState?: (problem: string | null) => void;
}

export interface OpenedEngine {
  engine: EngineLike;
  /** One line for the log, e.g. "qwen3_moe colocated on cpu (2 threads), 412 KV blocks". */
  description: string;
}

export type EngineOpener = (req: OpenEngineRequest) => Promise<OpenedEngine>;
