/**
 * The load contract between the TypeScript checkpoint reader (checkpoint/, which parses
 * config.json and safetensors headers and validates everything) and the C++ engine
 * (which memory-maps the byte ranges it is given and trusts nothing else).
 * TypeScript decides which tensors a role needs; native loads exactly those.
 */

/**
 * Supported architecture families: one row each in the family table
 * (native/src/checkpoint/families.ts). A label only: the engine builds every layer from
 * its kinds (LayerKinds) and binds tensors by slot (TensorSlot); C++ names no family.
 */
export type ArchFamily = 'qwen3_moe' | 'qwen3' | 'llama' | 'mixtral' | 'deepseek_v2' | 'deepseek_v3' | 'qwen3_next' | 'qwen3_5_moe';

/**
 * The attention module of a decoder layer. gqa: q/k/v/o projections (grouped-query;
 * multi-head as the case numKvHeads = numHeads), optional biases and q/k head norms;
 * mla: DeepSeek's multi-head latent attention (ModelConfigSpec.mla);
 * gqa_gated: Qwen3-Next's gated full attention, gqa with q_proj twice as wide (per head
 * [query headDim | gate headDim]), the attention output times sigmoid(gate) before o_proj,
 * q/k head norms and RoPE on the first rotaryDim dims of each head;
 * gdn: Gated DeltaNet linear attention (ModelConfigSpec.gdn): no KV cache, a fixed-size
 * state per sequence (conv window + [Hv, Dk, Dv] recurrent state).
 * The engine builds gqa, mla and gqa_gated today (engineKinds.ts refuses gdn before loading).
 */
export type AttentionKind = 'gqa' | 'mla' | 'gqa_gated' | 'gdn';

/**
 * The FFN module of a decoder layer. dense: one SiLU-gated MLP; moe: a router choosing
 * numExpertsPerTok of numExperts routed experts; moe+shared: the same plus shared experts
 * every token goes through (ModelConfigSpec.routing.sharedIntermediateSize wide);
 * moe+gated_shared: softmax top-k experts plus one shared expert
 * (ModelConfigSpec.gatedSharedExpert.intermediateSize wide) whose output is scaled per
 * token by sigmoid(shared_expert_gate . x) (Qwen3-Next, Qwen3.5-MoE).
 */
export type FfnKind = 'dense' | 'moe' | 'moe+shared' | 'moe+gated_shared';

/** What one decoder layer is built from: the engine picks one module per kind. */
export interface LayerKinds {
  attention: AttentionKind;
  ffn: FfnKind;
}

/** Whether a layer's FFN half routes tokens to experts (moe or moe+shared). */
export function isMoeLayer(kinds: LayerKinds): boolean {
  return kinds.ffn !== 'dense';
}

/** Tensors of the whole model (TensorRef without layer). */
export type GlobalSlot = 'embed' | 'final_norm' | 'lm_head';
/** A layer's two RMSNorms; the attention half runs both (the FFN half receives normed rows). */
export type NormSlot = 'input_norm' | 'post_attention_norm';
/** gqa attention: projections, their optional biases (attentionBias) and q/k head norms (qkNorm). */
export type GqaSlot =
  | 'attn.q_proj'
  | 'attn.k_proj'
  | 'attn.v_proj'
  | 'attn.o_proj'
  | 'attn.q_bias'
  | 'attn.k_bias'
  | 'attn.v_bias'
  | 'attn.o_bias'
  | 'attn.q_norm'
  | 'attn.k_norm';
/** mla attention: q_proj, or q_a_proj -> q_a_norm -> q_b_proj (qLoraRank > 0); the latent projections; o_proj. */
export type MlaSlot = 'attn.q_proj' | 'attn.q_a_proj' | 'attn.q_a_norm' | 'attn.q_b_proj' | 'attn.kv_a_proj' | 'attn.kv_a_norm' | 'attn.kv_b_proj' | 'attn.o_proj';
/** dense FFN: the SiLU-gated MLP. */
export type DenseFfnSlot = 'ffn.gate_proj' | 'ffn.up_proj' | 'ffn.down_proj';
/**
 * moe / moe+shared FFN: the router [E, H] and its score correction bias [E] (noaux_tc;
 * both go to the attention role with computeGateOnAttention), and the shared experts' MLP (moe+shared).
 */
export type MoeSlot = 'ffn.router' | 'ffn.router_bias' | 'ffn.shared.gate_proj' | 'ffn.shared.up_proj' | 'ffn.shared.down_proj';
/** One routed expert's MLP (TensorRef.expert says which). */
export type ExpertSlot = 'ffn.experts.gate_proj' | 'ffn.experts.up_proj' | 'ffn.experts.down_proj';
/**
 * gdn attention (Gated DeltaNet). Its input projection comes in one of two layouts
 * (GdnSpec.projLayout): 'grouped' (Qwen3-Next) in_proj_qkvz [2 Hk Dk + 2 Hv Dv, H] grouped
 * per key head as [q Dk | k Dk | v (Hv/Hk) Dv | z (Hv/Hk) Dv] and in_proj_ba [2 Hv, H]
 * grouped per key head as [b Hv/Hk | a Hv/Hk]; 'split' (Qwen3.5) in_proj_qkv
 * [2 Hk Dk + Hv Dv, H] as [q all heads | k all heads | v all heads], in_proj_z [Hv Dv, H],
 * in_proj_b [Hv, H], in_proj_a [Hv, H]. Then the depthwise causal conv over the q|k|v
 * channels conv1d [2 Hk Dk + Hv Dv, 1, K], dt_bias [Hv], A_log [Hv], the gated RMSNorm over
 * each value head gated_norm [Dv] (plain weight, not 1 + weight), out_proj [H, Hv Dv].
 */
export type GdnSlot =
  | 'attn.in_proj_qkvz'
  | 'attn.in_proj_ba'
  | 'attn.in_proj_qkv'
  | 'attn.in_proj_z'
  | 'attn.in_proj_b'
  | 'attn.in_proj_a'
  | 'attn.conv1d'
  | 'attn.dt_bias'
  | 'attn.a_log'
  | 'attn.gated_norm'
  | 'attn.out_proj';
/** moe+gated_shared FFN: the shared expert's scalar gate [1, H] (its MLP uses the ffn.shared.* slots). */
export type GatedSharedSlot = 'ffn.shared_expert_gate';
/** Tensors of one decoder layer (TensorRef.layer says which). */
export type LayerSlot = NormSlot | GqaSlot | MlaSlot | GdnSlot | DenseFfnSlot | MoeSlot | GatedSharedSlot | ExpertSlot;
/** Where the engine binds a tensor. */
export type TensorSlot = GlobalSlot | LayerSlot;

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

/**
 * Gated DeltaNet (gdn layers, Qwen3-Next / Qwen3.5). Per token: project q, k (Hk heads of
 * Dk), v, z (Hv heads of Dv), b, a (Hv); a depthwise causal conv (kernel convKernel, SiLU)
 * over the q|k|v channels; beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias);
 * q, k L2-normalised and repeated to Hv heads; the gated delta rule over a state
 * [Hv, Dk, Dv] (q scaled by Dk ** -0.5); out = RMSNorm(o) * weight * silu(z) per value
 * head; out_proj. State per sequence: the last convKernel - 1 inputs of the conv channels
 * plus the recurrent state.
 */
export interface GdnSpec {
  /** linear_num_key_heads (Hk). */
  numKeyHeads: number;
  /** linear_num_value_heads (Hv, a multiple of Hk). */
  numValueHeads: number;
  /** linear_key_head_dim (Dk). */
  keyHeadDim: number;
  /** linear_value_head_dim (Dv). */
  valueHeadDim: number;
  /** linear_conv_kernel_dim (K). */
  convKernel: number;
  /** How the input projection is stored (GdnSlot): grouped in_proj_qkvz/ba (Qwen3-Next) or split in_proj_qkv/z/b/a (Qwen3.5). */
  projLayout: 'grouped' | 'split';
}

/** The model, already validated and normalised from config.json by its family row. */
export interface ModelConfigSpec {
  /** The family row the config was read with (a label: nothing branches on it). */
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
  /** gqa layers: RMSNorm over each head of q and k before RoPE (Qwen3): the attn.q_norm / attn.k_norm slots. */
  qkNorm: boolean;
  /** gqa layers: biases on the q/k/v/o projections (llama attention_bias): the attn.*_bias slots. */
  attentionBias: boolean;
  /**
   * Dims of each q/k head RoPE rotates (the first rotaryDim, rotate-half within them; the
   * rest pass through): headDim, or headDim x partial_rotary_factor (Qwen3-Next: 1/4).
   */
  rotaryDim: number;
  /**
   * Every RMSNorm of the decoder (input, post-attention, final, q/k head norms) scales by
   * (1 + weight): zero-centred stored weights (Qwen3-Next, Qwen3.5). The gdn gated norm
   * does not (plain weight).
   */
  normUnitOffset: boolean;
  /**
   * config.json describes a vision encoder (vision_config, Qwen3.5) that the engine does not
   * load: the model is served as text only and its vision weights (model.visual.*) are ignored.
   */
  visionTowerIgnored: boolean;
  /** Routed experts per MoE layer; 0 for dense models. */
  numExperts: number;
  /** Experts chosen per token. */
  numExpertsPerTok: number;
  /** Expert MLP intermediate size. */
  moeIntermediateSize: number;
  /** Renormalise the top-k router weights to sum to 1 (Qwen3-MoE norm_topk_prob; Mixtral always). */
  normTopkProb: boolean;
  /** [numLayers] each decoder layer's attention and FFN kinds. */
  layers: LayerKinds[];
  /** Token ids that end generation. */
  eosTokenIds: number[];
  bosTokenId: number | null;
  /** The hyper-parameters of mla layers; null when no layer is mla (with MLA, numKvHeads = 1 and headDim = qkRopeHeadDim). */
  mla: MlaSpec | null;
  /** Grouped routing and shared experts (DeepSeek) of moe / moe+shared layers; null: softmax top-k, no shared experts. */
  routing: MoeRoutingSpec | null;
  /** The hyper-parameters of gdn layers; null when no layer is gdn. */
  gdn: GdnSpec | null;
  /** The sigmoid-gated shared expert of moe+gated_shared layers (shared_expert_intermediate_size wide); null when none is. */
  gatedSharedExpert: { intermediateSize: number } | null;
  /** Std of the weight initialiser (HF initializer_range, default 0.02): the scale of dummy weights. */
  initializerRange: number;
  /** Storage dtype of the weights (HF torch_dtype, default bf16): what dummy weights are generated in. */
  weightDtype: TensorDtype;
}

/** Storage dtype of a tensor in the checkpoint. */
export type TensorDtype = 'bf16' | 'f16' | 'f32';

/** Where the engine binds a tensor: a slot of the model, or of one layer (and routed expert). */
export interface SlotBinding {
  /** The slot, e.g. "ffn.experts.down_proj". */
  slot: TensorSlot;
  /** The decoder layer of a LayerSlot; absent for a GlobalSlot. */
  layer?: number;
  /** The routed expert of an ExpertSlot; absent otherwise. */
  expert?: number;
}

/** A tensor's bytes: a validated byte range inside one checkpoint file, or generated (dummy). */
export interface StoredTensor {
  /**
   * The checkpoint's name, e.g. "model.layers.0.mlp.experts.3.down_proj.weight": for
   * messages and the seed of dummy values; the engine never interprets it.
   */
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

/** One tensor to map and the slot it fills. */
export interface TensorRef extends SlotBinding, StoredTensor {}

/** TensorRef.file of a dummy tensor (generated on load, no file). */
export const DUMMY_FILE = -1;

/**
 * Everything native needs to build a model for one role: per layer its kinds
 * (config.layers), and the tensors each slot binds. Example, layer 3 of DeepSeek-V2-Lite:
 * config.layers[3] = { attention: 'mla', ffn: 'moe+shared' }, and among the tensors
 * { slot: 'attn.kv_a_proj', layer: 3, name: 'model.layers.3.self_attn.kv_a_proj_with_mqa.weight', ... },
 * { slot: 'ffn.experts.up_proj', layer: 3, expert: 17, name: 'model.layers.3.mlp.experts.17.up_proj.weight', ... }.
 */
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
