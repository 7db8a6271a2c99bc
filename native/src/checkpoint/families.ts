/**
 * THE FAMILY TABLE: one row per supported Hugging Face architecture. A row is all the
 * engine knows of a family: transformers' defaults, how config.json gives each layer's
 * attention and FFN kinds and their hyper-parameters (familyFields.ts, deepseekConfig.ts),
 * and what the checkpoint calls each tensor slot. Adding a family is a row here (plus
 * kernels for a layer kind the engine lacks); C++ builds layers from kinds and binds
 * slots, and names no family and no checkpoint tensor.
 */
import type { ArchFamily, ModelConfigSpec, TensorSlot } from '../modelSpec.js';
import { deepseekFfn, mlaAttention } from './deepseekConfig.js';
import { denseFfn, gqaAttention, mixtralFfn, qwen3MoeFfn, type AttentionFields, type FamilyInput, type FfnFields } from './familyFields.js';
import type { FusedExpertNames } from './fusedExperts.js';
import { hybridAttention, qwen3NextFfn } from './qwen3NextConfig.js';

/**
 * The checkpoint name of every slot: "{L}" stands for the layer index, "{e}" for the
 * routed expert's.
 */
export type SlotNames = Readonly<Record<TensorSlot, string>>;

/** One supported architecture. */
export interface FamilyRow {
  family: ArchFamily;
  /** transformers' defaults of the config class. */
  defaults: {
    ropeTheta: number;
    rmsNormEps: number;
    maxPositions: number;
    headDim: number | null;
    /** intermediate_size when config.json has none (only Qwen3-Next has a default); dense layers need one. */
    intermediateSize?: number;
  };
  /** The attention kind of the layers and its hyper-parameters. */
  attention: (input: FamilyInput) => AttentionFields;
  /** Each layer's FFN kind and the MoE hyper-parameters. */
  ffn: (input: FamilyInput) => FfnFields;
  names: SlotNames;
  /** The config.json field the routed experts' width comes from, for shape messages (default moe_intermediate_size). */
  expertWidthField?: 'intermediate_size';
  /** A config.json field the family refuses (a feature the engine does not implement): what and how to fix it. */
  refuse?: (input: FamilyInput) => { problem: string; fix: string } | null;
  /** RMSNorm scales by (1 + weight) (ModelConfigSpec.normUnitOffset). */
  normUnitOffset?: true;
  /** The language model's config is config.json's text_config (a vision-language checkpoint served as text only). */
  textConfig?: true;
  /** Routed experts may be stored fused under these names (fusedExperts.ts); loaded either way. */
  fusedExperts?: FusedExpertNames;
  /** The family's published checkpoints store the experts fused: make-model writes them so. */
  writesFusedExperts?: true;
}

const layer = (rest: string, prefix = 'model.'): string => `${prefix}layers.{L}.${rest}`;

/** The names of the transformers Llama lineage (Llama, Qwen3, Qwen3-MoE, DeepSeek). */
const hfNames: SlotNames = {
  embed: 'model.embed_tokens.weight',
  final_norm: 'model.norm.weight',
  lm_head: 'lm_head.weight',
  input_norm: layer('input_layernorm.weight'),
  post_attention_norm: layer('post_attention_layernorm.weight'),
  'attn.q_proj': layer('self_attn.q_proj.weight'),
  'attn.k_proj': layer('self_attn.k_proj.weight'),
  'attn.v_proj': layer('self_attn.v_proj.weight'),
  'attn.o_proj': layer('self_attn.o_proj.weight'),
  'attn.q_bias': layer('self_attn.q_proj.bias'),
  'attn.k_bias': layer('self_attn.k_proj.bias'),
  'attn.v_bias': layer('self_attn.v_proj.bias'),
  'attn.o_bias': layer('self_attn.o_proj.bias'),
  'attn.q_norm': layer('self_attn.q_norm.weight'),
  'attn.k_norm': layer('self_attn.k_norm.weight'),
  'attn.q_a_proj': layer('self_attn.q_a_proj.weight'),
  'attn.q_a_norm': layer('self_attn.q_a_layernorm.weight'),
  'attn.q_b_proj': layer('self_attn.q_b_proj.weight'),
  'attn.kv_a_proj': layer('self_attn.kv_a_proj_with_mqa.weight'),
  'attn.kv_a_norm': layer('self_attn.kv_a_layernorm.weight'),
  'attn.kv_b_proj': layer('self_attn.kv_b_proj.weight'),
  'ffn.gate_proj': layer('mlp.gate_proj.weight'),
  'ffn.up_proj': layer('mlp.up_proj.weight'),
  'ffn.down_proj': layer('mlp.down_proj.weight'),
  'ffn.router': layer('mlp.gate.weight'),
  'ffn.router_bias': layer('mlp.gate.e_score_correction_bias'),
  'ffn.shared.gate_proj': layer('mlp.shared_experts.gate_proj.weight'),
  'ffn.shared.up_proj': layer('mlp.shared_experts.up_proj.weight'),
  'ffn.shared.down_proj': layer('mlp.shared_experts.down_proj.weight'),
  'ffn.experts.gate_proj': layer('mlp.experts.{e}.gate_proj.weight'),
  'ffn.experts.up_proj': layer('mlp.experts.{e}.up_proj.weight'),
  'ffn.experts.down_proj': layer('mlp.experts.{e}.down_proj.weight'),
  // The gdn and gated-shared-expert slots, as Qwen3-Next names them (qwenNextNames).
  'attn.in_proj_qkvz': layer('linear_attn.in_proj_qkvz.weight'),
  'attn.in_proj_ba': layer('linear_attn.in_proj_ba.weight'),
  'attn.in_proj_qkv': layer('linear_attn.in_proj_qkv.weight'),
  'attn.in_proj_z': layer('linear_attn.in_proj_z.weight'),
  'attn.in_proj_b': layer('linear_attn.in_proj_b.weight'),
  'attn.in_proj_a': layer('linear_attn.in_proj_a.weight'),
  'attn.conv1d': layer('linear_attn.conv1d.weight'),
  'attn.dt_bias': layer('linear_attn.dt_bias'),
  'attn.a_log': layer('linear_attn.A_log'),
  'attn.gated_norm': layer('linear_attn.norm.weight'),
  'attn.out_proj': layer('linear_attn.out_proj.weight'),
  'ffn.shared_expert_gate': layer('mlp.shared_expert_gate.weight'),
};

/**
 * Qwen3-Next / Qwen3.5-MoE: the hf names under `prefix` ("model." for the causal LMs,
 * "model.language_model." inside Qwen3_5MoeForConditionalGeneration, whose vision weights
 * model.visual.* and multi-token-prediction weights mtp.* the engine does not load), with
 * one shared expert (mlp.shared_expert, singular) and its gate. Routed experts are the
 * per-expert modules mlp.experts.{e}.{gate,up,down}_proj (the published Qwen3-Next
 * checkpoints), or fused mlp.experts.gate_up_proj / down_proj (qwenNextFusedExperts: the
 * published Qwen3.5-MoE checkpoints, and transformers 5's layout).
 */
function qwenNextNames(prefix: string): SlotNames {
  const names: Record<string, string> = {};
  for (const [slot, name] of Object.entries(hfNames)) names[slot] = name.replace(/^model\./, prefix);
  const sharedExpert = (proj: string): string => layer(`mlp.shared_expert.${proj}.weight`, prefix);
  return {
    ...(names as Record<TensorSlot, string>),
    lm_head: 'lm_head.weight',
    'ffn.shared.gate_proj': sharedExpert('gate_proj'),
    'ffn.shared.up_proj': sharedExpert('up_proj'),
    'ffn.shared.down_proj': sharedExpert('down_proj'),
  };
}

/** Mixtral's sparse block: the router and experts w1 (gate), w3 (up), w2 (down). */
const mixtralNames: SlotNames = {
  ...hfNames,
  'ffn.router': layer('block_sparse_moe.gate.weight'),
  'ffn.experts.gate_proj': layer('block_sparse_moe.experts.{e}.w1.weight'),
  'ffn.experts.up_proj': layer('block_sparse_moe.experts.{e}.w3.weight'),
  'ffn.experts.down_proj': layer('block_sparse_moe.experts.{e}.w2.weight'),
};

const qwen3Attention = gqaAttention({ qkNorm: true, biases: 'attention_bias' });

/** The fused expert tensors of Qwen3-Next / Qwen3.5-MoE under `prefix`. */
const qwenNextFusedExperts = (prefix: string): FusedExpertNames => ({
  gateUp: layer('mlp.experts.gate_up_proj', prefix),
  down: layer('mlp.experts.down_proj', prefix),
});

/** Qwen3-Next / Qwen3.5-MoE: transformers' defaults (rope_theta: the generic 10000; published checkpoints set 1e7). */
const qwenNextDefaults = { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768, headDim: 256 };

/** HF architectures[0] -> row. */
const rows: Readonly<Record<string, FamilyRow>> = {
  Qwen3MoeForCausalLM: {
    family: 'qwen3_moe',
    defaults: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768, headDim: null },
    attention: qwen3Attention,
    ffn: qwen3MoeFfn,
    names: hfNames,
  },
  Qwen3ForCausalLM: {
    family: 'qwen3',
    // Qwen3Config defaults head_dim to 128; the others derive it as hidden_size / heads.
    defaults: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 32768, headDim: 128 },
    attention: qwen3Attention,
    ffn: denseFfn,
    names: hfNames,
  },
  LlamaForCausalLM: {
    family: 'llama',
    defaults: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 2048, headDim: null },
    attention: gqaAttention({ qkNorm: false, biases: 'attention_bias' }),
    ffn: denseFfn,
    names: hfNames,
  },
  MixtralForCausalLM: {
    family: 'mixtral',
    defaults: { ropeTheta: 1e6, rmsNormEps: 1e-5, maxPositions: 4096 * 32, headDim: null },
    attention: gqaAttention({ qkNorm: false, biases: 'never' }),
    ffn: mixtralFfn,
    names: mixtralNames,
    expertWidthField: 'intermediate_size',
    refuse: ({ base }) =>
      base.sliding_window === null || base.sliding_window === undefined
        ? null
        : { problem: `sliding_window ${base.sliding_window}: sliding-window attention is not supported`, fix: 'set sliding_window to null' },
  },
  DeepseekV2ForCausalLM: {
    family: 'deepseek_v2',
    defaults: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 2048, headDim: null },
    attention: mlaAttention(false),
    ffn: deepseekFfn(false),
    names: hfNames,
  },
  DeepseekV3ForCausalLM: {
    family: 'deepseek_v3',
    defaults: { ropeTheta: 10000, rmsNormEps: 1e-6, maxPositions: 4096, headDim: null },
    attention: mlaAttention(true),
    ffn: deepseekFfn(true),
    names: hfNames,
  },
  Qwen3NextForCausalLM: {
    family: 'qwen3_next',
    defaults: { ...qwenNextDefaults, intermediateSize: 5632 },
    attention: hybridAttention('grouped'),
    ffn: qwen3NextFfn('next'),
    names: qwenNextNames('model.'),
    normUnitOffset: true,
    fusedExperts: qwenNextFusedExperts('model.'),
  },
  Qwen3_5MoeForConditionalGeneration: {
    family: 'qwen3_5_moe',
    defaults: qwenNextDefaults,
    attention: hybridAttention('split'),
    ffn: qwen3NextFfn('3.5'),
    names: qwenNextNames('model.language_model.'),
    normUnitOffset: true,
    textConfig: true,
    fusedExperts: qwenNextFusedExperts('model.language_model.'),
    writesFusedExperts: true,
  },
  // The text-only class of the same model (its text config at the top level, weights under model.).
  Qwen3_5MoeForCausalLM: {
    family: 'qwen3_5_moe',
    defaults: qwenNextDefaults,
    attention: hybridAttention('split'),
    ffn: qwen3NextFfn('3.5'),
    names: qwenNextNames('model.'),
    normUnitOffset: true,
    fusedExperts: qwenNextFusedExperts('model.'),
    writesFusedExperts: true,
  },
};

/** HF architecture strings this engine loads. */
export const supportedArchitectures: readonly string[] = Object.keys(rows);

/** The row of an HF architecture string, or undefined when it is not supported. */
export function findFamilyRow(hfArchitecture: string): FamilyRow | undefined {
  return rows[hfArchitecture];
}

/** The row a parsed config was read with. */
export function familyRowOf(config: Pick<ModelConfigSpec, 'hfArchitecture'>): FamilyRow {
  const row = rows[config.hfArchitecture];
  if (!row) throw new Error(`architecture ${config.hfArchitecture} has no row in the family table (supported: ${supportedArchitectures.join(', ')})`);
  return row;
}

/** A slot's checkpoint name in a layer (and expert). */
export function slotName(names: SlotNames, slot: TensorSlot, layerIndex?: number, expert?: number): string {
  return names[slot].replace('{L}', String(layerIndex)).replace('{e}', String(expert));
}
