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
  /** Releases the engine (and its connector). */
  close(): Promise<void>;
}
