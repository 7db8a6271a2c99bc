/**
 * How a role process gets its engine. The role passes its settings (AFD options included,
 * straight from the shared config) and a progress callback; the opener returns the engine
 * behind the small EngineLike interface. Tests inject a fake opener.
 */
import type { AfdConfig, LoadFormat, RolePhase } from '@afd/shared';
import type { EngineLike } from '../serving/engineLike.js';

export interface OpenEngineRequest {
  modelDir: string;
  /** Where the weights come from (dummy: generated from `seed`). */
  loadFormat: LoadFormat;
  seed: number;
  role: 'colocated' | 'attention';
  backend: 'cpu' | 'cuda' | 'auto';
  device: number;
  /** 0 = engine default. */
  threads: number;
  kvBlockSize: number;
  /** KV cache budget in MiB; undefined = engine default. */
  kvCacheMib: number | undefined;
  /** Share of free device memory for the KV cache (CUDA); undefined = kvCacheOptions' default. */
  kvMemoryFraction?: number | undefined;
  /** Context window cap; undefined = the model's. */
  maxModelLen: number | undefined;
  /** AFD options (topology, rank, hosts, port, dbo, gate, graphs, deadline) for attention ranks. */
  afd: AfdConfig;
  /** Identity of this start of the topology ("" = none); passed to the native link. */
  rendezvousId?: string;
  /** Most tokens one step sends (the scheduler's max-num-batched-tokens; sizes connector peer's inboxes). */
  maxStepTokens?: number;
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
