/**
 * Load format dummy: a role's load spec from config.json alone. Every tensor the role owns
 * becomes a dummy TensorRef (file -1) that the engine generates where it lives, from the
 * spec's seed and the tensor's name (so every role that holds a tensor generates the same
 * values, and split roles equal colocated). Values are uniform and scaled like a trained
 * model's: matrices and embeddings with the config's initializer_range as std (HF's
 * initialiser), the LM head with std 1 / sqrt(hidden) so that logits have about unit
 * spread whatever the width (HF's 0.02 would make a narrow model's logits flat), norm
 * weights around 1 (1 +- 0.1), or around 0 where the norm scales by (1 + weight)
 * (normUnitOffset); so norms, routing and attention are not degenerate and logits are not
 * flat. Gated DeltaNet parameters follow transformers' init: dt_bias around 1, A_log around
 * 0 (decay rates exp(A_log) near 1), the depthwise conv uniform in +-1/sqrt(kernel) (torch's
 * Conv1d default).
 */
import type { ModelConfigSpec, ModelLoadSpec, ModelRole, TensorRef, TensorSlot } from '../modelSpec.js';
import { DUMMY_FILE } from '../modelSpec.js';
import { dtypeBytes, numElements } from './dtype.js';
import { bindingOf, expertRangeFor, roleTensors } from './tensorTables.js';

/** Half-width of the uniform around 1 that norm weights are drawn from. */
export const DUMMY_NORM_SPREAD = 0.1;

/** The RMSNorm weights: drawn around 1. */
const normSlots: ReadonlySet<TensorSlot> = new Set<TensorSlot>(['input_norm', 'post_attention_norm', 'final_norm', 'attn.q_norm', 'attn.k_norm', 'attn.q_a_norm', 'attn.kv_a_norm']);

/** How one dummy tensor is drawn: value = offset + scale * (2u - 1), u uniform in [0, 1). */
export function dummyInit(
  slot: TensorSlot,
  config: Pick<ModelConfigSpec, 'initializerRange' | 'hiddenSize' | 'tieWordEmbeddings'> & Partial<Pick<ModelConfigSpec, 'normUnitOffset' | 'gdn'>>,
): { scale: number; offset: number } {
  if (normSlots.has(slot)) return { scale: DUMMY_NORM_SPREAD, offset: config.normUnitOffset ? 0 : 1 };
  // The gdn gated norm multiplies by its plain weight.
  if (slot === 'attn.gated_norm' || slot === 'attn.dt_bias') return { scale: DUMMY_NORM_SPREAD, offset: 1 };
  if (slot === 'attn.a_log') return { scale: 0.5, offset: 0 };
  if (slot === 'attn.conv1d') return { scale: 1 / Math.sqrt(config.gdn?.convKernel ?? 4), offset: 0 };
  const lmHead = slot === 'lm_head' || (config.tieWordEmbeddings && slot === 'embed');
  const std = lmHead ? 1 / Math.sqrt(config.hiddenSize) : config.initializerRange;
  // Uniform on [-a, a] has std a / sqrt(3): a = std * sqrt(3).
  return { scale: std * Math.sqrt(3), offset: 0 };
}

/** Options of dummyLoadSpec. */
export interface DummySpecOptions {
  computeGateOnAttention?: boolean;
  /** Seed of the values (a non-negative integer). */
  seed: number;
  /** Expert parallelism: this FFN rank of numRanks generates only its routed experts (tensorTables expertRangeFor). */
  expertParallel?: { rank: number; numRanks: number };
}

/** The role's load spec with every tensor generated, and its resident bytes. */
export function dummyLoadSpec(config: ModelConfigSpec, role: ModelRole, opts: DummySpecOptions): { spec: ModelLoadSpec; residentBytes: number } {
  if (!Number.isInteger(opts.seed) || opts.seed < 0) throw new Error(`dummy weights: seed must be a non-negative integer (got ${opts.seed})`);
  const gateOnAttention = (opts.computeGateOnAttention ?? false) && config.numExperts > 0;
  const dtype = config.weightDtype;
  const range = expertRangeFor(config, role, opts.expertParallel);
  const tensors: TensorRef[] = roleTensors(config, role, gateOnAttention, range).map((t) => ({
    ...bindingOf(t),
    name: t.name,
    file: DUMMY_FILE,
    dtype,
    shape: [...t.shape],
    offset: 0,
    byteLength: numElements(t.shape) * dtypeBytes[dtype],
    dummy: dummyInit(t.slot, config),
  }));
  const residentBytes = tensors.reduce((sum, t) => sum + t.byteLength, 0);
  return { spec: { config, role, computeGateOnAttention: gateOnAttention, ...(range ? { expertRange: range } : {}), files: [], tensors, dummySeed: opts.seed }, residentBytes };
}
