/**
 * Safetensors dtype strings we accept, mapped to the engine's storage dtypes.
 */
import type { TensorDtype } from '../modelSpec.js';

/** Bytes per element of each storage dtype. */
export const dtypeBytes: Record<TensorDtype, number> = { bf16: 2, f16: 2, f32: 4 };

/** Safetensors header dtype string -> storage dtype. */
export const safetensorsDtypes: Readonly<Record<string, TensorDtype>> = { BF16: 'bf16', F16: 'f16', F32: 'f32' };

/** Storage dtype -> safetensors header dtype string. */
export const safetensorsDtypeNames: Record<TensorDtype, string> = { bf16: 'BF16', f16: 'F16', f32: 'F32' };

/** Number of elements of a shape (1 for a scalar []). */
export function numElements(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
