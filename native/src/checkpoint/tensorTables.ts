/**
 * The tensors of a model: per layer, the slots of its attention kind and FFN kind with
 * their shapes (from the config), named as the family's checkpoint names them (the family
 * table, families.ts), and which role owns each one. The attention role owns the
 * embedding, every norm (the FFN half receives the already normalised hidden state), the
 * attention projections and the LM head; the FFN role owns the dense MLP or the experts
 * and the router, unless the router is placed on attention. The router's score correction
 * bias goes wherever the router goes; shared experts are the FFN role's.
 */
import { expertRangeOf, type ExpertRange } from '@afd/shared';
import type { AttentionKind, FfnKind, GdnSpec, LayerSlot, MlaSpec, ModelConfigSpec, ModelRole, SlotBinding, TensorSlot } from '../modelSpec.js';
import { familyRowOf, slotName, type FamilyRow } from './families.js';

/** The half of a decoder layer (or the model) a tensor belongs to. */
export type TensorOwner = 'attention' | 'ffn' | 'router';

/** One tensor the model needs: its slot, its checkpoint name and shape, and its owner. */
export interface ExpectedTensor extends SlotBinding {
  name: string;
  shape: number[];
  owner: TensorOwner;
  /** Which config fields the shape comes from (for error messages). */
  derivation: string;
}

/** A slot of a layer module with its shape and where the shape comes from. */
type SlotShape = [slot: LayerSlot, shape: number[], derivation: string];

/** The owner of a slot: the FFN module's slots are the FFN role's, but for the router's. */
function ownerOf(slot: TensorSlot): TensorOwner {
  if (slot === 'ffn.router' || slot === 'ffn.router_bias') return 'router';
  return slot.startsWith('ffn.') ? 'ffn' : 'attention';
}

/** gqa, or gqa_gated (gated: q_proj also yields the output gate, per head [query | gate], twice as wide). */
function gqaSlots(config: ModelConfigSpec, gated: boolean): SlotShape[] {
  const { hiddenSize: h, numHeads, numKvHeads, headDim: hd } = config;
  const q = numHeads * hd;
  const qOut = gated ? 2 * q : q;
  const qDerivation = gated ? '2 x num_attention_heads x head_dim (query and output gate)' : 'num_attention_heads x head_dim';
  const kv = numKvHeads * hd;
  const out: SlotShape[] = [
    ['attn.q_proj', [qOut, h], `${qDerivation}, hidden_size`],
    ['attn.k_proj', [kv, h], 'num_key_value_heads x head_dim, hidden_size'],
    ['attn.v_proj', [kv, h], 'num_key_value_heads x head_dim, hidden_size'],
    ['attn.o_proj', [h, q], 'hidden_size, num_attention_heads x head_dim'],
  ];
  if (config.attentionBias) {
    out.push(
      ['attn.q_bias', [qOut], qDerivation],
      ['attn.k_bias', [kv], 'num_key_value_heads x head_dim'],
      ['attn.v_bias', [kv], 'num_key_value_heads x head_dim'],
      ['attn.o_bias', [h], 'hidden_size'],
    );
  }
  if (config.qkNorm) out.push(['attn.q_norm', [hd], 'head_dim'], ['attn.k_norm', [hd], 'head_dim']);
  return out;
}

/** MLA: q_proj, or q_a_proj + q_a_norm + q_b_proj; kv_a, kv_a_norm, kv_b, o. */
function mlaSlots(config: ModelConfigSpec, mla: MlaSpec): SlotShape[] {
  const { hiddenSize: h, numHeads: nh } = config;
  const qk = mla.qkNopeHeadDim + mla.qkRopeHeadDim;
  const qOut = 'num_attention_heads x (qk_nope_head_dim + qk_rope_head_dim)';
  const q: SlotShape[] =
    mla.qLoraRank === 0
      ? [['attn.q_proj', [nh * qk, h], `${qOut}, hidden_size`]]
      : [
          ['attn.q_a_proj', [mla.qLoraRank, h], 'q_lora_rank, hidden_size'],
          ['attn.q_a_norm', [mla.qLoraRank], 'q_lora_rank'],
          ['attn.q_b_proj', [nh * qk, mla.qLoraRank], `${qOut}, q_lora_rank`],
        ];
  return [
    ...q,
    ['attn.kv_a_proj', [mla.kvLoraRank + mla.qkRopeHeadDim, h], 'kv_lora_rank + qk_rope_head_dim, hidden_size'],
    ['attn.kv_a_norm', [mla.kvLoraRank], 'kv_lora_rank'],
    ['attn.kv_b_proj', [nh * (mla.qkNopeHeadDim + mla.vHeadDim), mla.kvLoraRank], 'num_attention_heads x (qk_nope_head_dim + v_head_dim), kv_lora_rank'],
    ['attn.o_proj', [h, nh * mla.vHeadDim], 'hidden_size, num_attention_heads x v_head_dim'],
  ];
}

/** Gated DeltaNet: the input projections in the checkpoint's layout, the conv, the decay parameters, the gated norm, out_proj. */
function gdnSlots(config: ModelConfigSpec, g: GdnSpec): SlotShape[] {
  const h = config.hiddenSize;
  const key = g.numKeyHeads * g.keyHeadDim;
  const value = g.numValueHeads * g.valueHeadDim;
  const keyD = 'linear_num_key_heads x linear_key_head_dim';
  const valueD = 'linear_num_value_heads x linear_value_head_dim';
  const hv = g.numValueHeads;
  const convDim = 2 * key + value;
  const projections: SlotShape[] =
    g.projLayout === 'grouped'
      ? [
          ['attn.in_proj_qkvz', [2 * key + 2 * value, h], `2 x ${keyD} + 2 x ${valueD}, hidden_size`],
          ['attn.in_proj_ba', [2 * hv, h], '2 x linear_num_value_heads, hidden_size'],
        ]
      : [
          ['attn.in_proj_qkv', [convDim, h], `2 x ${keyD} + ${valueD}, hidden_size`],
          ['attn.in_proj_z', [value, h], `${valueD}, hidden_size`],
          ['attn.in_proj_b', [hv, h], 'linear_num_value_heads, hidden_size'],
          ['attn.in_proj_a', [hv, h], 'linear_num_value_heads, hidden_size'],
        ];
  return [
    ...projections,
    // nn.Conv1d(groups = channels) stores [channels, 1, kernel].
    ['attn.conv1d', [convDim, 1, g.convKernel], `2 x ${keyD} + ${valueD}, 1, linear_conv_kernel_dim`],
    ['attn.dt_bias', [hv], 'linear_num_value_heads'],
    ['attn.a_log', [hv], 'linear_num_value_heads'],
    ['attn.gated_norm', [g.valueHeadDim], 'linear_value_head_dim'],
    ['attn.out_proj', [h, value], `hidden_size, ${valueD}`],
  ];
}

function attentionSlots(config: ModelConfigSpec, kind: AttentionKind): SlotShape[] {
  switch (kind) {
    case 'gqa':
      return gqaSlots(config, false);
    case 'gqa_gated':
      return gqaSlots(config, true);
    case 'mla':
      if (!config.mla) throw new Error('an mla layer needs config.mla (its hyper-parameters)');
      return mlaSlots(config, config.mla);
    case 'gdn':
      if (!config.gdn) throw new Error('a gdn layer needs config.gdn (its hyper-parameters)');
      return gdnSlots(config, config.gdn);
  }
}

/** The FFN slots of a layer but the routed experts (expertTensors): the dense MLP, or the router, its bias and the shared experts. */
function ffnSlots(config: ModelConfigSpec, kind: FfnKind): SlotShape[] {
  const h = config.hiddenSize;
  if (kind === 'dense') {
    const i = config.intermediateSize;
    return [
      ['ffn.gate_proj', [i, h], 'intermediate_size, hidden_size'],
      ['ffn.up_proj', [i, h], 'intermediate_size, hidden_size'],
      ['ffn.down_proj', [h, i], 'hidden_size, intermediate_size'],
    ];
  }
  const out: SlotShape[] = [['ffn.router', [config.numExperts, h], 'num_experts, hidden_size']];
  if (config.routing?.scoreCorrectionBias) out.push(['ffn.router_bias', [config.numExperts], 'n_routed_experts']);
  const shared = (s: number, d: string): void => {
    out.push(['ffn.shared.gate_proj', [s, h], `${d}, hidden_size`], ['ffn.shared.up_proj', [s, h], `${d}, hidden_size`], ['ffn.shared.down_proj', [h, s], `hidden_size, ${d}`]);
  };
  if (kind === 'moe+shared') shared(config.routing?.sharedIntermediateSize ?? 0, 'moe_intermediate_size x n_shared_experts');
  if (kind === 'moe+gated_shared') {
    if (!config.gatedSharedExpert) throw new Error('a moe+gated_shared layer needs config.gatedSharedExpert');
    shared(config.gatedSharedExpert.intermediateSize, 'shared_expert_intermediate_size');
    out.push(['ffn.shared_expert_gate', [1, h], '1, hidden_size']);
  }
  return out;
}

function layerTensors(row: FamilyRow, config: ModelConfigSpec, layer: number): ExpectedTensor[] {
  const h = config.hiddenSize;
  const kinds = config.layers[layer]!;
  const bind = ([slot, shape, derivation]: SlotShape): ExpectedTensor => ({ slot, layer, name: slotName(row.names, slot, layer), shape, owner: ownerOf(slot), derivation });
  const out = [
    bind(['input_norm', [h], 'hidden_size']),
    ...attentionSlots(config, kinds.attention).map(bind),
    bind(['post_attention_norm', [h], 'hidden_size']),
    ...ffnSlots(config, kinds.ffn).map(bind),
  ];
  if (kinds.ffn === 'dense') return out;
  const im = config.moeIntermediateSize;
  const width = row.expertWidthField ?? 'moe_intermediate_size';
  const projections: SlotShape[] = [
    ['ffn.experts.gate_proj', [im, h], `${width}, hidden_size`],
    ['ffn.experts.up_proj', [im, h], `${width}, hidden_size`],
    ['ffn.experts.down_proj', [h, im], `hidden_size, ${width}`],
  ];
  for (let expert = 0; expert < config.numExperts; expert++) {
    for (const [slot, shape, derivation] of projections) {
      out.push({ slot, layer, expert, name: slotName(row.names, slot, layer, expert), shape, owner: 'ffn', derivation });
    }
  }
  return out;
}

/** Every tensor of the model, in checkpoint order (embedding, layers, final norm, LM head). */
export function modelTensors(config: ModelConfigSpec): ExpectedTensor[] {
  const row = familyRowOf(config);
  const { vocabSize: v, hiddenSize: h } = config;
  const global = (slot: 'embed' | 'final_norm' | 'lm_head', shape: number[], derivation: string): ExpectedTensor => ({ slot, name: slotName(row.names, slot), shape, owner: 'attention', derivation });
  const out = [global('embed', [v, h], 'vocab_size, hidden_size')];
  for (let l = 0; l < config.numLayers; l++) out.push(...layerTensors(row, config, l));
  out.push(global('final_norm', [h], 'hidden_size'));
  if (!config.tieWordEmbeddings) out.push(global('lm_head', [v, h], 'vocab_size, hidden_size'));
  return out;
}

/** The slot a tensor fills, as a TensorRef carries it. */
export function bindingOf(t: ExpectedTensor): SlotBinding {
  return { slot: t.slot, ...(t.layer !== undefined ? { layer: t.layer } : {}), ...(t.expert !== undefined ? { expert: t.expert } : {}) };
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
