/**
 * The data contract between the scheduler (TypeScript, agent/) and the engine (native/).
 * A step plan goes in, a step result comes out; the engine never reaches back into the
 * scheduler. All arrays are flat typed arrays so the plan crosses N-API without copies
 * of per-request objects.
 */

/** Sampling settings of one sequence. temperature 0 means greedy. */
export interface SamplingParams {
  /** Softmax temperature; 0 selects the arg-max token (greedy). */
  temperature: number;
  /** Keep only the k most likely tokens; 0 disables the filter. */
  topK: number;
  /** Keep the smallest set of tokens whose probability mass reaches p; 1 disables it. */
  topP: number;
  /**
   * Per-request seed (uint32). The engine draws the uniform for a token from
   * hash(seed, position), so a seeded request is reproducible across steps,
   * batches and topologies.
   */
  seed: number;
}

/**
 * One engine step over a batch of sequences. Sequence i owns tokens
 * [tokenOffsets[i], tokenOffsets[i+1]) of `tokenIds` / `positions`.
 */
export interface StepPlan {
  /** Number of sequences in the batch. */
  numSeqs: number;
  /** [numTokens] token ids of every sequence, concatenated in sequence order. */
  tokenIds: Int32Array;
  /** [numTokens] absolute position of each token in its sequence (0-based). */
  positions: Int32Array;
  /** [numSeqs + 1] prefix sums of tokens per sequence; tokenOffsets[0] = 0. */
  tokenOffsets: Int32Array;
  /** [numSeqs] tokens in the KV cache after this step (cached + new), per sequence. */
  contextLens: Int32Array;
  /** Columns of `blockTables` (the longest block table in the batch). */
  maxBlocksPerSeq: number;
  /** [numSeqs * maxBlocksPerSeq] KV block ids, row per sequence; unused slots are ignored. */
  blockTables: Int32Array;
  /** [numSeqs] 1 when a token is sampled for the sequence (its last prompt chunk or a decode). */
  sampleMask: Uint8Array;
  /** [numSeqs] sampling temperature. */
  temperature: Float32Array;
  /** [numSeqs] top-k (0 = off). */
  topK: Int32Array;
  /** [numSeqs] top-p (1 = off). */
  topP: Float32Array;
  /** [numSeqs] uint32 seeds. */
  seeds: Uint32Array;
  /**
   * Dual-batch overlap split: sequences [0, stageSplit) form stage 0 and
   * [stageSplit, numSeqs) stage 1. Equal to numSeqs when the step has one stage.
   */
  stageSplit: number;
  /** When true, the result carries the last-position logits of each sampled sequence. */
  returnLogits: boolean;
}

/** What one step produced. */
export interface StepResult {
  /** [numSeqs] the sampled token of each sequence; only entries with sampleMask 1 are meaningful. */
  tokenIds: Int32Array;
  /** [numSampled * vocabSize] fp32 logits of sampled sequences in batch order, when requested. */
  logits?: Float32Array;
  /** Wall time of the native step in milliseconds. */
  stepTimeMs: number;
}
