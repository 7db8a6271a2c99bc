/**
 * The slice of the native engine the serving layer needs. The role process adapts the real
 * engine (native/src/engine.ts) to this; unit tests plug in a fake one. Keeping it small
 * keeps the server testable without a model.
 */
import type { RankStats, StepPlan, StepResult } from '@afd/shared';

/** What the server must know about the loaded model and its KV cache. */
export interface EngineModelInfo {
  /** Vocabulary size of the LM head (token ids are in [0, vocabSize)). */
  vocabSize: number;
  /** Token ids that end generation (config.json / generation_config.json eos_token_id). */
  eosTokenIds: readonly number[];
  /** Context window the engine supports (prompt + output tokens of one sequence). */
  maxModelLen: number;
  /** KV blocks in the engine's paged cache. */
  numKvBlocks: number;
  /** Tokens per KV block. */
  kvBlockSize: number;
  /**
   * Recurrent-state slots of a model with linear-attention (gdn) layers
   * (NativeEngineInfo.numStateSlots): the most sequences that may run at once, each holding
   * one (StepPlan.stateSlots). 0 or absent: the model keeps no per-sequence state.
   */
  numStateSlots?: number;
}

/**
 * How an engine's KV cache (and recurrent state) travels between engines of one model
 * (prefill/decode disaggregation): exportKvBlocks gives, for each of numKvLayers layers with
 * a paged cache, each of its tensorsPerLayer tensors (K, V; or one latent row), each block
 * asked for: blockSize rows of rowBytes in dtype. A state slot is stateBytes (f32).
 */
export interface KvLayout {
  dtype: 'f32' | 'bf16' | 'f16';
  blockSize: number;
  numKvLayers: number;
  tensorsPerLayer: 1 | 2;
  rowBytes: number;
  /** Bytes of one recurrent-state slot; 0 = the model keeps none. */
  stateBytes: number;
}

/** Where a peer on this host maps this engine's KV cache (and recurrent state). */
export interface KvPeerDescriptor {
  kind: 'cuda' | 'cpu';
  /** os.hostname() of the process that owns the memory: a peer elsewhere does not try. */
  host: string;
  /** Opaque region handles, base64. */
  kv: string;
  kvBytes: number;
  state?: string;
  stateBytes: number;
  numKvBlocks: number;
  numStateSlots: number;
}

export interface KvPeerLink {
  /** Copies the peer's blocks srcIds[i] into this engine's blocks dstIds[i]; resolves once they are written. */
  pullKvBlocks(srcIds: Int32Array, dstIds: Int32Array): Promise<void>;
  /** Copies the peer's recurrent-state slot into this engine's slot. */
  pullStateSlot(srcSlot: number, dstSlot: number): Promise<void>;
  close(): void;
}

/**
 * Peer memory of the KV transfer (ranks on one host): the prefill rank's engine shares its
 * KV cache (CUDA IPC, or a shared mmap'd file on the CPU), the decode rank maps it and copies
 * the blocks itself, so only block ids travel on the wire.
 */
export interface KvPeerEngine {
  /** What this engine can map: its memory kind and host. */
  readonly kind: 'cuda' | 'cpu';
  readonly host: string;
  /** This engine's own KV in shareable memory (prefill side); null: not shareable (loaded without it). */
  readonly descriptor: KvPeerDescriptor | null;
  /** Waits until every KV write of the steps so far is visible to peers (call before handing out block ids). */
  fence(): Promise<void>;
  /** Maps a peer's memory (decode side); rejects with the reason (other host, other kind, the driver's refusal...). */
  open(d: KvPeerDescriptor): Promise<KvPeerLink>;
}

/** An engine whose KV blocks and state slots can be read out and written in (NativeEngine's exportKvBlocks and the like). */
export interface KvTransferEngine {
  readonly kvLayout: KvLayout;
  exportKvBlocks(blockIds: Int32Array): Promise<Uint8Array>;
  importKvBlocks(blockIds: Int32Array, data: Uint8Array): Promise<void>;
  exportStateSlot(slot: number): Promise<Uint8Array>;
  importStateSlot(slot: number, data: Uint8Array): Promise<void>;
  /** Peer memory on one host; absent: this engine moves KV only as bytes. */
  readonly peer?: KvPeerEngine;
}

/** Bytes of `numBlocks` blocks in a layout's export format. */
export function kvBytesOf(layout: KvLayout, numBlocks: number): number {
  return layout.numKvLayers * layout.tensorsPerLayer * numBlocks * layout.blockSize * layout.rowBytes;
}

/** Why a model with linear-attention layers serves without prefix caching (and its samples share no prompt blocks). */
export const STATE_SLOTS_NO_PREFIX_REUSE = 'its linear-attention (gdn) layers keep per-sequence recurrent state that KV blocks do not hold';

export interface EngineLike {
  readonly info: EngineModelInfo;
  /** Runs one step (every layer, every sequence of the plan) and samples. One at a time. */
  step(plan: StepPlan): Promise<StepResult>;
  /**
   * The deferred token mask (StepExtras.maskRows used, tokenMask absent) of the step in
   * flight: the engine runs the step's layers meanwhile and samples once it has it; null
   * withdraws it (the step fails). Absent: the serving loop puts the mask in the plan.
   */
  provideTokenMask?(mask: Int32Array | null): void;
  /**
   * Why the engine cannot run a step now, read at once (an attention rank whose FFN peer
   * was lost or hung past the step deadline: its link redials); null when it can. Absent:
   * it always can. The rank answers 503 to new requests meanwhile.
   */
  problem?(): string | null;
  /** Native runtime counters (cheap; read at ~10 Hz). */
  stats(): RankStats;
  /** Reading and writing KV blocks and state slots (prefill/decode disaggregation); absent: the engine cannot. */
  readonly kvTransfer?: KvTransferEngine;
  /** Releases the engine (and its connector). */
  close(): Promise<void>;
}
