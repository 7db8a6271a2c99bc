/**
 * Which tensors each architecture has, with their shapes, and which role owns each one.
 * The attention role owns the embedding, every norm (the FFN half receives the already
 * normalised hidden state), attention projections and the LM head; the FFN role owns the
 * dense MLP or the experts and the router, unless the router is placed on attention.
 * DeepSeek: MLA projections are attention's; shared experts are the FFN role's; the
 * gate's score correction bias goes wherever the gate goes.
 */
import { expertRangeOf, type ExpertRange } from '@afd/shared';
import type { MlaSpec, ModelConfigSpec, ModelRole, MoeRoutingSpec } from '../modelSpec.js';

/** The half of a decoder layer (or the model) a tensor belongs to. */
export type TensorOwner = 'attention' | 'ffn' | 'router';

/** One tensor the architecture needs. */
export interface ExpectedTensor {
  name: string;
  shape: number[];
  owner: TensorOwner;
  /** Which config fields the shape comes from (for error messages). */
  derivation: string;
  /** The routed expert a tensor belongs to (expert parallelism loads a range of them); absent otherwise. */
  expert?: number;
}

/** Names of one layer's FFN tensors, per architecture. */
interface FfnNames {
  router: string;
  expert(e: number, proj: 'gate' | 'up' | 'down'): string;
}

function ffnNames(config: ModelConfigSpec, layer: number): FfnNames {
  const p = `model.layers.${layer}`;
  if (config.arch === 'mixtral') {
    const w = { gate: 'w1', up: 'w3', down: 'w2' } as const;
    return { router: `${p}.block_sparse_moe.gate.weight`, expert: (e, proj) => `${p}.block_sparse_moe.experts.${e}.${w[proj]}.weight` };
  }
  return { router: `${p}.mlp.gate.weight`, expert: (e, proj) => `${p}.mlp.experts.${e}.${proj}_proj.weight` };
}

const t = (name: string, shape: number[], owner: TensorOwner, derivation: string): ExpectedTensor => ({ name, shape, owner, derivation });

/** DeepSeek MLA attention tensors of one layer (q_proj, or q_a_proj + q_a_layernorm + q_b_proj; kv_a, kv_b, o). */
function mlaTensors(config: ModelConfigSpec, mla: MlaSpec, p: string): ExpectedTensor[] {
  const { hiddenSize: h, numHeads: nh } = config;
  const qk = mla.qkNopeHeadDim + mla.qkRopeHeadDim;
  const a = (name: string, shape: number[], derivation: string): ExpectedTensor => t(`${p}.self_attn.${name}`, shape, 'attention', derivation);
  const q =
    mla.qLoraRank === 0
      ? [a('q_proj.weight', [nh * qk, h], 'num_attention_heads x (qk_nope_head_dim + qk_rope_head_dim), hidden_size')]
      : [
          a('q_a_proj.weight', [mla.qLoraRank, h], 'q_lora_rank, hidden_size'),
          a('q_a_layernorm.weight', [mla.qLoraRank], 'q_lora_rank'),
          a('q_b_proj.weight', [nh * qk, mla.qLoraRank], 'num_attention_heads x (qk_nope_head_dim + qk_rope_head_dim), q_lora_rank'),
        ];
  return [
    ...q,
    a('kv_a_proj_with_mqa.weight', [mla.kvLoraRank + mla.qkRopeHeadDim, h], 'kv_lora_rank + qk_rope_head_dim, hidden_size'),
    a('kv_a_layernorm.weight', [mla.kvLoraRank], 'kv_lora_rank'),
    a('kv_b_proj.weight', [nh * (mla.qkNopeHeadDim + mla.vHeadDim), mla.kvLoraRank], 'num_attention_heads x (qk_nope_head_dim + v_head_dim), kv_lora_rank'),
    a('o_proj.weight', [h, nh * mla.vHeadDim], 'hidden_size, num_attention_heads x v_head_dim'),
  ];
}

/** DeepSeek's extras of an MoE layer: the gate's score correction bias (with the gate) and the shared experts. */
function deepseekMoeTensors(config: ModelConfigSpec, routing: MoeRoutingSpec, p: string): ExpectedTensor[] {
  const h = config.hiddenSize;
  const s = routing.sharedIntermediateSize;
  const out: ExpectedTensor[] = [];
  if (routing.scoreCorrectionBias) out.push(t(`${p}.mlp.gate.e_score_correction_bias`, [config.numExperts], 'router', 'n_routed_experts'));
  if (routing.numSharedExperts > 0) {
    const d = 'moe_intermediate_size x n_shared_experts';
    out.push(
      t(`${p}.mlp.shared_experts.gate_proj.weight`, [s, h], 'ffn', `${d}, hidden_size`),
      t(`${p}.mlp.shared_experts.up_proj.weight`, [s, h], 'ffn', `${d}, hidden_size`),
      t(`${p}.mlp.shared_experts.down_proj.weight`, [h, s], 'ffn', `hidden_size, ${d}`),
    );
  }
  return out;
}

function gqaTensors(config: ModelConfigSpec, p: string): ExpectedTensor[] {
  const { hiddenSize: h, numHeads, numKvHeads, headDim: hd } = config;
  const q = numHeads * hd;
  const kv = numKvHeads * hd;
  const out: ExpectedTensor[] = [
    t(`${p}.self_attn.q_proj.weight`, [q, h], 'attention', 'num_attention_heads x head_dim, hidden_size'),
    t(`${p}.self_attn.k_proj.weight`, [kv, h], 'attention', 'num_key_value_heads x head_dim, hidden_size'),
    t(`${p}.self_attn.v_proj.weight`, [kv, h], 'attention', 'num_key_value_heads x head_dim, hidden_size'),
    t(`${p}.self_attn.o_proj.weight`, [h, q], 'attention', 'hidden_size, num_attention_heads x head_dim'),
  ];
  if (config.attentionBias) {
    out.push(
      t(`${p}.self_attn.q_proj.bias`, [q], 'attention', 'num_attention_heads x head_dim'),
      t(`${p}.self_attn.k_proj.bias`, [kv], 'attention', 'num_key_value_heads x head_dim'),
      t(`${p}.self_attn.v_proj.bias`, [kv], 'attention', 'num_key_value_heads x head_dim'),
      t(`${p}.self_attn.o_proj.bias`, [h], 'attention', 'hidden_size'),
    );
  }
  if (config.qkNorm) {
    out.push(t(`${p}.self_attn.q_norm.weight`, [hd], 'attention', 'head_dim'), t(`${p}.self_attn.k_norm.weight`, [hd], 'attention', 'head_dim'));
  }
  return out;
}

function layerTensors(config: ModelConfigSpec, layer: number): ExpectedTensor[] {
  const h = config.hiddenSize;
  const p = `model.layers.${layer}`;
  const out: ExpectedTensor[] = [
    t(`${p}.input_layernorm.weight`, [h], 'attention', 'hidden_size'),
    ...(config.mla ? mlaTensors(config, config.mla, p) : gqaTensors(config, p)),
    t(`${p}.post_attention_layernorm.weight`, [h], 'attention', 'hidden_size'),
  ];
  if (config.moeLayers[layer]) {
    const names = ffnNames(config, layer);
    const im = config.moeIntermediateSize;
    const size = config.arch === 'mixtral' ? 'intermediate_size' : 'moe_intermediate_size';
    out.push(t(names.router, [config.numExperts, h], 'router', 'num_experts, hidden_size'));
    if (config.routing) out.push(...deepseekMoeTensors(config, config.routing, p));
    for (let e = 0; e < config.numExperts; e++) {
      out.push(
        { ...t(names.expert(e, 'gate'), [im, h], 'ffn', `${size}, hidden_size`), expert: e },
        { ...t(names.expert(e, 'up'), [im, h], 'ffn', `${size}, hidden_size`), expert: e },
        { ...t(names.expert(e, 'down'), [h, im], 'ffn', `hidden_size, ${size}`), expert: e },
      );
    }
  } else {
    const i = config.intermediateSize;
    out.push(
      t(`${p}.mlp.gate_proj.weight`, [i, h], 'ffn', 'intermediate_size, hidden_size'),
      t(`${p}.mlp.up_proj.weight`, [i, h], 'ffn', 'intermediate_size, hidden_size'),
      t(`${p}.mlp.down_proj.weight`, [h, i], 'ffn', 'hidden_size, intermediate_size'),
    );
  }
  return out;
}

/** Every tensor of the model, in checkpoint order (embedding, layers, final norm, LM head). */
export function modelTensors(config: ModelConfigSpec): ExpectedTensor[] {
  const { vocabSize: v, hiddenSize: h } = config;
  const out: ExpectedTensor[] = [{ name: 'model.embed_tokens.weight', shape: [v, h], owner: 'attention', derivation: 'vocab_size, hidden_size' }];
  for (let l = 0; l < config.numLayers; l++) out.push(...layerTensors(config, l));
  out.push({ name: 'model.norm.weight', shape: [h], owner: 'attention', derivation: 'hidden_size' });
  if (!config.tieWordEmbeddings) out.push({ name: 'lm_head.weight', shape: [v, h], owner: 'attention', derivation: 'vocab_size, hidden_size' });
  return out;
}

/** Whether `role` loads a tensor of `owner`. */
export function roleOwns(role: ModelRole, owner: TensorOwner, computeGateOnAttention: boolean): boolean {
  if (role === 'colocated') return true;
  if (owner === 'router') return computeGateOnAttention ? role === 'attention' : role === 'ffn';
  return owner === role;
}

/**
 * The tensors a role needs; with `experts` (an expert-parallel FFN rank) only the routed
 * experts in that range.
 */
export function roleTensors(config: ModelConfigSpec, role: ModelRole, computeGateOnAttention: boolean, experts?: ExpertRange): ExpectedTensor[] {
  const held = (e: number | undefined): boolean => e === undefined || !experts || (e >= experts.start && e < experts.end);
  return modelTensors(config).filter((t) => roleOwns(role, t.owner, computeGateOnAttention) && held(t.expert));
}

/**
 * The routed experts a role loads: a range for an FFN rank of an expert-parallel group of
 * several ranks, else undefined (every expert). Throws for a role that holds no experts.
 */
export function expertRangeFor(config: ModelConfigSpec, role: ModelRole, expertParallel: { rank: number; numRanks: number } | undefined): ExpertRange | undefined {
  if (!expertParallel || config.numExperts === 0 || expertParallel.numRanks <= 1) return undefined;
  if (role !== 'ffn') throw new Error(`expert parallelism splits the experts over FFN ranks; the ${role} role loads no expert range (load it without expertParallel)`);
  return expertRangeOf(expertParallel.rank, config.numExperts, expertParallel.numRanks);
}
