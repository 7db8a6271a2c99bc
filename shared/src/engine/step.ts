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
  /**
   * Min-p: drop tokens whose probability (after temperature) is below minP times the
   * most likely token's; 0 disables it. Optional in a SamplingParams (default 0).
   */
  minP?: number;
}

/** Most top log-probabilities a request may ask for per token (OpenAI's and vLLM's limit). */
export const MAX_TOP_LOGPROBS = 20;

/**
 * Logit processing and log-probabilities of a step, present only when a sequence of the
 * step asks for any (a step without them pays nothing). Order on the device, per sampled
 * row: logit bias, then repetition, frequency and presence penalties (vLLM's rules), then
 * temperature; the processed row is what the sampler draws from (with top-k/top-p/min-p on
 * top) and what `StepResult.logprobs` reports (log-softmax; temperature 0 counts as 1).
 * Lists are CSR over the step's sequences: sequence s owns entries [offsets[s], offsets[s+1]).
 */
export interface StepExtras {
  /** [numSeqs] subtracted once from every token seen in the output; 0 = off. */
  presencePenalty: Float32Array;
  /** [numSeqs] subtracted per occurrence in the output; 0 = off. */
  frequencyPenalty: Float32Array;
  /** [numSeqs] divides positive / multiplies negative logits of tokens in prompt or output; 1 = off. */
  repetitionPenalty: Float32Array;
  /** [numSeqs + 1] CSR of the distinct tokens seen (only for sequences with a penalty on). */
  seenOffsets: Int32Array;
  /** Token ids seen, per sequence. */
  seenTokenIds: Int32Array;
  /** Occurrences of each seen token in the output; 0 = seen in the prompt only. */
  seenCounts: Int32Array;
  /**
   * [numSeqs] the engine's penalty slot of sequence s, -1 = none (its seen list comes with
   * every step). A slot keeps the sequence's seen tokens on the device between steps and the
   * sampler counts each token it draws for s into it, so the list crosses once, not every
   * step. Slots are the caller's to hand out: one per running sequence, never two in a step.
   * Absent (with penaltySlotSeeds): no sequence has a slot.
   */
  penaltySlots?: Int32Array;
  /**
   * [numSeqs] 1 = clear s's slot and write s's seen list of this step into it before
   * sampling (a slot's first step, or after the sequence was preempted); 0 = the slot holds
   * what earlier steps left (s then sends no seen list).
   */
  penaltySlotSeeds?: Uint8Array;
  /** [numSeqs + 1] CSR of additive logit biases (OpenAI logit_bias; -Infinity bans a token). */
  biasOffsets: Int32Array;
  biasTokenIds: Int32Array;
  biasValues: Float32Array;
  /** [numSeqs] log-probabilities of the sampled token plus its top k (0..MAX_TOP_LOGPROBS); -1 = none. */
  numLogprobs: Int32Array;
  /** [numSeqs] log-probabilities of this step's prompt tokens plus their top k; -1 = none. */
  numPromptLogprobs: Int32Array;
  /**
   * [numSeqs] the prompt token after this step's last token (the target of that row's prompt
   * logprob) when the step does not sample the sequence and it asks for prompt logprobs; -1 otherwise.
   */
  nextPromptTokenIds: Int32Array;
  /**
   * [numSeqs] row of the step's token mask that constrains sequence s's sampled token
   * (structured outputs); -1 = unconstrained. Only sampled sequences (sampleMask 1) may have
   * a row; rows are 0..numMaskRows-1, each used once.
   */
  maskRows: Int32Array;
  /**
   * [numMaskRows * ceil(vocabSize / 32)] allowed-token bitmasks, row after row: bit (t % 32)
   * of word floor(t / 32) set = token t allowed (xgrammar's layout). Every other token's logit
   * becomes -Infinity before penalties, sampling and logprobs. When absent while some maskRows
   * entry is >= 0, the mask is deferred: the engine runs the step's layers and waits, before
   * sampling, for `provideTokenMask` (so the host computes the mask while the device runs).
   */
  tokenMask?: Int32Array;
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
  /** [numSeqs] min-p (0 = off). */
  minP: Float32Array;
  /** Penalties, biases and log-probabilities; absent when no sequence asks for any. */
  extras?: StepExtras;
  /**
   * [numSeqs] recurrent-state slot of each sequence, for models with linear-attention (gdn)
   * layers (engine info numStateSlots > 0): required there, and must be absent otherwise.
   * Slot k holds sequence s's conv and delta-rule state after its first
   * positions[tokenOffsets[s]] tokens; a step whose first position for s is 0 starts s from
   * the zero state (whatever the slot held is ignored). One slot per running sequence, in
   * [0, numStateSlots), distinct within a step.
   */
  stateSlots?: Int32Array;
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
  /** [numSampled * vocabSize] fp32 logits of sampled sequences in batch order, when requested (after logit bias and penalties). */
  logits?: Float32Array;
  /** Wall time of the native step in milliseconds. */
  stepTimeMs: number;
  /** Log-probabilities of the sampled tokens: one row per sampled sequence with numLogprobs >= 0. */
  logprobs?: TokenLogprobs;
  /**
   * Prompt log-probabilities: per sequence with numPromptLogprobs >= 0, one row per prompt
   * token of this step whose next token is known (the chunk's next token, or
   * nextPromptTokenIds for its last row), in token order. They are the model's raw
   * log-softmax (no bias, penalties or temperature), as vLLM reports prompt logprobs.
   */
  promptLogprobs?: TokenLogprobs;
}

/** Rows of log-probabilities, CSR over the step's sequences. */
export interface TokenLogprobs {
  /** [numSeqs + 1] rows of sequence s are [rowOffsets[s], rowOffsets[s+1]). */
  rowOffsets: Int32Array;
  /** Entries per row: 1 + the step's largest k. */
  width: number;
  /**
   * [rows * width] entry 0: the chosen token (the sampled one, or the next prompt token);
   * entries 1..k: the row's k most likely tokens, most likely first (ties: lower id);
   * -1 pads a row whose k is below the step's largest.
   */
  tokenIds: Int32Array;
  /** [rows * width] log-probabilities of tokenIds (NaN where the id is -1). */
  logprobs: Float32Array;
  /** [rows] 1-based rank of the chosen token (1 = most likely). */
  ranks: Int32Array;
}
