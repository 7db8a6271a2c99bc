/**
 * Routed experts stored fused: one gate_up_proj [E, 2I, H] (per expert its gate rows, then
 * its up rows) and one down_proj [E, H, I] per MoE layer, transformers 5's in-memory layout
 * and the layout of the published Qwen3.5-MoE checkpoints. Every expert projection is a
 * contiguous byte range inside them (row-major), so the engine binds it by slot exactly as
 * a per-expert tensor: nothing is copied and C++ does not know the difference.
 */
import type { ModelConfigSpec, StoredTensor } from '../modelSpec.js';
import { numElements } from './dtype.js';
import { CheckpointError, formatShape } from './errors.js';
import type { FamilyRow } from './families.js';
import type { CheckpointTensors } from './shards.js';
import type { ExpectedTensor } from './tensorTables.js';

/** The checkpoint names of a family's fused expert tensors ("{L}": the layer). */
export interface FusedExpertNames {
  /** [numExperts, 2 x moe_intermediate_size, hidden_size]: gate rows then up rows of each expert. */
  gateUp: string;
  /** [numExperts, hidden_size, moe_intermediate_size]. */
  down: string;
}

/** The fused tensor an expert projection lives in, and which part of one expert's slab it is. */
function partOf(names: FusedExpertNames, want: ExpectedTensor): { name: string; part: number; parts: number } | undefined {
  const layerName = (n: string): string => n.replace('{L}', String(want.layer));
  switch (want.slot) {
    case 'ffn.experts.gate_proj':
      return { name: layerName(names.gateUp), part: 0, parts: 2 };
    case 'ffn.experts.up_proj':
      return { name: layerName(names.gateUp), part: 1, parts: 2 };
    case 'ffn.experts.down_proj':
      return { name: layerName(names.down), part: 0, parts: 1 };
    default:
      return undefined;
  }
}

/**
 * The byte range of a routed expert's projection inside the checkpoint's fused tensor, or
 * undefined when the tensor is not an expert projection or the checkpoint has no fused
 * tensor for it. Throws when the fused tensor's shape disagrees with config.json.
 */
export function fusedExpertRef(ckpt: CheckpointTensors, names: FusedExpertNames, numExperts: number, want: ExpectedTensor): StoredTensor | undefined {
  if (want.expert === undefined) return undefined;
  const where = partOf(names, want);
  const fused = where && ckpt.tensors.get(where.name);
  if (!where || !fused) return undefined;
  const [rows, cols] = want.shape as [number, number];
  const expectShape = [numExperts, where.parts * rows, cols];
  if (fused.shape.length !== 3 || fused.shape.some((d, i) => d !== expectShape[i])) {
    const what = where.parts === 2 ? 'num_experts, 2 x moe_intermediate_size, hidden_size' : 'num_experts, hidden_size, moe_intermediate_size';
    throw new CheckpointError(ckpt.files[fused.file]!, `has shape ${formatShape(fused.shape)} but config.json needs ${formatShape(expectShape)} (${what})`, {
      tensor: where.name,
      fix: 'config.json and the weights disagree; use the config that came with the checkpoint',
    });
  }
  const elementBytes = fused.byteLength / numElements(fused.shape);
  const sliceBytes = rows * cols * elementBytes;
  const offset = fused.offset + (want.expert * where.parts + where.part) * sliceBytes;
  const label = where.parts === 2 ? `${where.name}[${want.expert}, ${where.part === 0 ? 'gate' : 'up'} rows]` : `${where.name}[${want.expert}]`;
  return { name: label, file: fused.file, dtype: fused.dtype, shape: [rows, cols], offset, byteLength: sliceBytes };
}

/** A tensor as a checkpoint stores it: an expected tensor, or a fused expert tensor standing for all experts' projections of one layer. */
export interface StoredTensorPlan {
  name: string;
  shape: number[];
  /** The slot of the tensor (of its first expert projection for a fused one): what its initial values depend on. */
  slot: ExpectedTensor['slot'];
}

/**
 * The tensors a checkpoint of this family stores, in order: modelTensors, with each MoE
 * layer's per-expert projections replaced by its two fused tensors where the family's
 * published checkpoints are fused (row.writesFusedExperts). What make-model writes.
 */
export function storedTensorPlans(row: FamilyRow, config: ModelConfigSpec, tensors: readonly ExpectedTensor[]): StoredTensorPlan[] {
  const names = row.fusedExperts;
  if (!names || !row.writesFusedExperts) return tensors.map((t) => ({ name: t.name, shape: t.shape, slot: t.slot }));
  const out: StoredTensorPlan[] = [];
  const h = config.hiddenSize;
  const im = config.moeIntermediateSize;
  const E = config.numExperts;
  for (const t of tensors) {
    if (t.expert === undefined) out.push({ name: t.name, shape: t.shape, slot: t.slot });
    else if (t.expert === 0 && t.slot === 'ffn.experts.gate_proj') {
      const layerName = (n: string): string => n.replace('{L}', String(t.layer));
      out.push({ name: layerName(names.gateUp), shape: [E, 2 * im, h], slot: 'ffn.experts.gate_proj' }, { name: layerName(names.down), shape: [E, h, im], slot: 'ffn.experts.down_proj' });
    }
  }
  return out;
}
