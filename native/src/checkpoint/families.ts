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

/**
 * The checkpoint name of every slot: "{L}" stands for the layer index, "{e}" for the
 * routed expert's.
 */
export type SlotNames = Readonly<Record<TensorSlot, string>>;

/** One supported architecture. */
export interface FamilyRow {
  family: ArchFamily;
  /** transformers' defaults of the config class. */
  defaults: { ropeTheta: number; rmsNormEps: number; maxPositions: number; headDim: number | null };
  /** The attention kind of the layers and its hyper-parameters. */
  attention: (input: FamilyInput) => AttentionFields;
  /** Each layer's FFN kind and the MoE hyper-parameters. */
  ffn: (input: FamilyInput) => FfnFields;
  names: SlotNames;
  /** The config.json field the routed experts' width comes from, for shape messages (default moe_intermediate_size). */
  expertWidthField?: 'intermediate_size';
  /** A config.json field the family refuses (a feature the engine does not implement): what and how to fix it. */
  refuse?: (input: FamilyInput) => { problem: string; fix: string } | null;
}

const layer = (rest: string): string => `model.layers.{L}.${rest}`;

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
};

/** Mixtral's sparse block: the router and experts w1 (gate), w3 (up), w2 (down). */
const mixtralNames: SlotNames = {
  ...hfNames,
  'ffn.router': layer('block_sparse_moe.gate.weight'),
  'ffn.experts.gate_proj': layer('block_sparse_moe.experts.{e}.w1.weight'),
  'ffn.experts.up_proj': layer('block_sparse_moe.experts.{e}.w3.weight'),
  'ffn.experts.down_proj': layer('block_sparse_moe.experts.{e}.w2.weight'),
};

const qwen3Attention = gqaAttention({ qkNorm: true, biases: 'attention_bias' });

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
