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

/** An engine whose KV blocks and state slots can be read out and written in (NativeEngine's exportKvBlocks and the like). */
export interface KvTransferEngine {
  readonly kvLayout: KvLayout;
  exportKvBlocks(blockIds: Int32Array): Promise<Uint8Array>;
  importKvBlocks(blockIds: Int32Array, data: Uint8Array): Promise<void>;
  exportStateSlot(slot: number): Promise<Uint8Array>;
  importStateSlot(slot: number, data: Uint8Array): Promise<void>;
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
