/**
 * Memory capacity of the planner: weights + KV cache per GPU bound the batch. What each
 * kind of rank holds:
 *
 *   colocated replica   every weight + the KV of its batch
 *   attention rank      attention weights (with embeddings and LM head) + the KV of its batch
 *   FFN rank            FFN / expert weights, 1/n of the experts when n FFN ranks form an EP group
 *   EP-only rank (n)    attention weights + 1/n of the FFN weights + the KV of its batch
 *
 * Assumptions: the KV of a sequence is context x kvBytesPerToken (no paging slack); the FFN
 * weights split evenly over an EP group (the router and any dense FFN included, a small
 * overstatement of the saving); activations and workspace are not counted.
 */
import type { CostProfile } from './profile.js';

export interface MemoryModel {
  /** Bytes of one device (GPU, or host RAM on CPU). */
  deviceBytes: number;
  weightBytes: number;
  attentionWeightBytes: number;
  ffnWeightBytes: number;
  /** KV bytes per token of context; 0 when unknown (then KV is not counted: see notes). */
  kvBytesPerToken: number;
  /** What was derived or assumed, for the report. */
  notes: string[];
}

const GIB = 1024 ** 3;

/** "57 GiB", "4.7 GiB" (binary, as --gpu-mem-gib takes it). */
export const formatGib = (bytes: number): string => `${(bytes / GIB).toFixed(bytes >= 10 * GIB ? 0 : 1)} GiB`;

/**
 * The memory model of a profile; gpuMemGib overrides the profile's device memory. Null when
 * neither gives the device's memory (capacity is then not modelled: the caller says so).
 */
export function memoryModel(profile: CostProfile, gpuMemGib?: number): MemoryModel | null {
  const deviceBytes = gpuMemGib !== undefined ? gpuMemGib * GIB : profile.deviceMemoryBytes;
  if (deviceBytes === undefined) return null;
  const m = profile.model;
  const notes: string[] = [];
  let attentionWeightBytes = m.attentionWeightBytes;
  let ffnWeightBytes = m.ffnWeightBytes;
  if (attentionWeightBytes === undefined && ffnWeightBytes !== undefined) {
    attentionWeightBytes = Math.max(0, m.weightBytes - ffnWeightBytes);
    notes.push('attention weights derived as the whole model minus the FFN weights');
  } else if (ffnWeightBytes === undefined && attentionWeightBytes !== undefined) {
    ffnWeightBytes = Math.max(0, m.weightBytes - attentionWeightBytes);
    notes.push('FFN weights derived as the whole model minus the attention weights');
  } else if (attentionWeightBytes === undefined || ffnWeightBytes === undefined) {
    attentionWeightBytes = m.weightBytes;
    ffnWeightBytes = m.weightBytes;
    notes.push('the profile has no attention/FFN weight split (a version-1 profile): every AFD rank is assumed to hold the whole model, an upper bound; measure again with afd-bench profile');
  }
  if (m.kvBytesPerToken === undefined) notes.push('the profile has no KV bytes per token: the KV cache is not counted, only weights bound the batch');
  if (gpuMemGib !== undefined) notes.push(`device memory ${gpuMemGib} GiB from --gpu-mem-gib`);
  return { deviceBytes, weightBytes: m.weightBytes, attentionWeightBytes, ffnWeightBytes, kvBytesPerToken: m.kvBytesPerToken ?? 0, notes };
}

/** Bytes one rank needs: its weights and the KV of `batch` sequences at `context`. */
export interface RankNeed {
  weightBytes: number;
  kvBytes: number;
}

const kv = (m: MemoryModel, batch: number, context: number): number => batch * context * m.kvBytesPerToken;

export const colocatedNeed = (m: MemoryModel, batch: number, context: number): RankNeed => ({ weightBytes: m.weightBytes, kvBytes: kv(m, batch, context) });
export const attentionNeed = (m: MemoryModel, batch: number, context: number): RankNeed => ({ weightBytes: m.attentionWeightBytes, kvBytes: kv(m, batch, context) });
/** An FFN rank: all FFN weights, or 1/epSize of them in an EP group. */
export const ffnNeed = (m: MemoryModel, epSize: number): RankNeed => ({ weightBytes: m.ffnWeightBytes / epSize, kvBytes: 0 });
export const epRankNeed = (m: MemoryModel, epSize: number, batch: number, context: number): RankNeed => ({
  weightBytes: m.attentionWeightBytes + m.ffnWeightBytes / epSize,
  kvBytes: kv(m, batch, context),
});

export const needBytes = (n: RankNeed): number => n.weightBytes + n.kvBytes;

/** Null when every rank fits; else why not ("57 GiB of weights do not fit 24 GiB", or with KV). */
export function doesNotFit(m: MemoryModel, needs: { role: string; need: RankNeed }[]): string | null {
  for (const { role, need } of needs) {
    if (need.weightBytes > m.deviceBytes) return `${role}: ${formatGib(need.weightBytes)} of weights do not fit ${formatGib(m.deviceBytes)}`;
    if (needBytes(need) > m.deviceBytes) return `${role}: ${formatGib(need.weightBytes)} of weights + ${formatGib(need.kvBytes)} of KV do not fit ${formatGib(m.deviceBytes)}`;
  }
  return null;
}
