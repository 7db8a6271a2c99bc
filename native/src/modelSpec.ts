/**
 * The load contract between the TypeScript checkpoint reader (checkpoint/, which parses
 * config.json and safetensors headers and validates everything) and the C++ engine
 * (which memory-maps the byte ranges it is given and trusts nothing else).
 * TypeScript decides which tensors a role needs; native loads exactly those.
 */

/** Supported architecture families (one C++ file each under native/src/model/). */
export type ArchFamily = 'qwen3_moe' | 'qwen3' | 'llama' | 'mixtral' | 'deepseek_v2' | 'deepseek_v3';

/** Which half (or both) of every decoder layer a process runs. */
export type ModelRole = 'colocated' | 'attention' | 'ffn';

/** RoPE frequency scaling, normalised from HF's rope_scaling / rope_parameters. */
export interface RopeScalingSpec {
  /** 'default' = plain RoPE. */
  type: 'default' | 'linear' | 'llama3' | 'yarn' | 'dynamic';
  factor: number;
  /** llama3 only. */
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
  /** yarn only. */
  betaFast: number;
  betaSlow: number;
  /** yarn attention scaling (mscale); 1 when unused. */
  attentionFactor: number;
}

/**
 * DeepSeek multi-head latent attention (MLA). The KV cache holds per token the normed
 * latent (kvLoraRank) and the roped key (qkRopeHeadDim), shared by all heads.
 */
export interface MlaSpec {
  /** Rank of the query compression (q_a_proj -> q_a_layernorm -> q_b_proj); 0 = a plain q_proj (DeepSeek-V2-Lite). */
  qLoraRank: number;
  /** kv_lora_rank: width of the compressed KV latent. */
  kvLoraRank: number;
  qkNopeHeadDim: number;
  qkRopeHeadDim: number;
  vHeadDim: number;
  /** RoPE on adjacent pairs (x[2i], x[2i+1]), DeepSeek's layout; false: rotate-half (V3 rope_interleave false). */
  ropeInterleave: boolean;
  /** qk_head_dim ** -0.5, times yarn mscale(factor, mscale_all_dim) ** 2 when rope scaling is yarn. */
  softmaxScale: number;
}

/** DeepSeek routing: grouped top-k over softmax or sigmoid scores, plus shared experts. */
export interface MoeRoutingSpec {
  scoringFunc: 'softmax' | 'sigmoid';
  topkMethod: 'greedy' | 'group_limited_greedy' | 'noaux_tc';
  /** Experts split into nGroup equal groups; tokens choose within topkGroup of them (1 / 1 for greedy). */
  nGroup: number;
  topkGroup: number;
  /** Multiplies the routed weights (after renormalisation). */
  routedScalingFactor: number;
  /** mlp.gate.e_score_correction_bias [E] is part of the gate (noaux_tc). */
  scoreCorrectionBias: boolean;
  numSharedExperts: number;
  /** moe_intermediate_size x n_shared_experts (0 without shared experts). */
  sharedIntermediateSize: number;
}

/** Model hyper-parameters, already validated and normalised from config.json. */
export interface ModelConfigSpec {
  arch: ArchFamily;
  /** The HF architectures[0] string, e.g. "Qwen3MoeForCausalLM". */
  hfArchitecture: string;
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  /** Dense MLP intermediate size (dense archs and dense layers of MoE archs). */
  intermediateSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScalingSpec;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Qwen3: RMSNorm over each head of q and k before RoPE. */
  qkNorm: boolean;
  /** Bias on q/k/v/o projections (llama attention_bias). */
  attentionBias: boolean;
  /** Routed experts per MoE layer; 0 for dense models. */
  numExperts: number;
  /** Experts chosen per token. */
  numExpertsPerTok: number;
  /** Expert MLP intermediate size. */
  moeIntermediateSize: number;
  /** Renormalise the top-k router weights to sum to 1 (Qwen3-MoE norm_topk_prob; Mixtral always). */
  normTopkProb: boolean;
  /** [numLayers] true where the layer's FFN half is MoE, false where it is a dense MLP. */
  moeLayers: boolean[];
  /** Token ids that end generation. */
  eosTokenIds: number[];
  bosTokenId: number | null;
  /** MLA attention (DeepSeek); null for every other family (numKvHeads = 1 and headDim = qkRopeHeadDim then). */
  mla: MlaSpec | null;
  /** Grouped routing and shared experts (DeepSeek); null: softmax top-k. */
  routing: MoeRoutingSpec | null;
  /** Std of the weight initialiser (HF initializer_range, default 0.02): the scale of dummy weights. */
  initializerRange: number;
  /** Storage dtype of the weights (HF torch_dtype, default bf16): what dummy weights are generated in. */
  weightDtype: TensorDtype;
}

/** Storage dtype of a tensor in the checkpoint. */
export type TensorDtype = 'bf16' | 'f16' | 'f32';

/** One tensor to map: a validated byte range inside one checkpoint file. */
export interface TensorRef {
  /** HF name, e.g. "model.layers.0.mlp.experts.3.down_proj.weight". */
  name: string;
  /** Index into ModelLoadSpec.files. */
  file: number;
  dtype: TensorDtype;
  shape: number[];
  /** Absolute byte offset in the file (header already skipped). */
  offset: number;
  byteLength: number;
  /** Load format dummy (file -1): generated as offset + scale * (2u - 1), u uniform per element. */
  dummy?: { scale: number; offset: number };
}

/** TensorRef.file of a dummy tensor (generated on load, no file). */
export const DUMMY_FILE = -1;

/** Everything native needs to build a model for one role. */
export interface ModelLoadSpec {
  config: ModelConfigSpec;
  role: ModelRole;
  /** Router on the attention side (gate weights go to the attention role, logits cross the wire). */
  computeGateOnAttention: boolean;
  /**
   * FFN role with expert parallelism: the routed experts [start, end) this rank holds (only
   * their tensors are listed; the same range in every MoE layer). Absent = every expert.
   */
  expertRange?: { start: number; end: number };
  /** Absolute paths of the safetensors files. */
  files: string[];
  /** Exactly the tensors this role needs. */
  tensors: TensorRef[];
  /** Load format dummy: the seed every dummy tensor's values derive from (with its name). */
  dummySeed?: number;
}
