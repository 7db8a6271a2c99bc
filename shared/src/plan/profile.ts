/**
 * The planner's cost profile: what `afd-bench profile` measured on one backend and model,
 * as point lists the step simulator interpolates. Versioned, so a profile measured on
 * another host (a GPU box, a card we do not have) loads here or is refused by name.
 *
 * Curves (all times in milliseconds, per whole step across every layer unless stated):
 * - attention: the attention half of one decode step (embed, every layer's attention and
 *   norms, LM head, sampling) against batch and context length;
 * - ffn: the FFN half of one decode step (every layer's FFN / experts) against tokens;
 * - connectors: one A->F->A round trip of one layer against the bytes sent one way.
 *
 * Version 2 adds optional fields (memory capacity, MoE shape, per-EP-size FFN curves, SM
 * shares, the router's cost); a version-1 profile still loads, without them.
 */
import { z } from 'zod';

export const PROFILE_VERSION = 2;
/** Versions this build reads: 1 lacks the optional fields of 2 and loads as is. */
export const PROFILE_VERSIONS_READ = [1, 2] as const;

/** One attention-half measurement: `ms` per decode step at `batch` sequences of `context` tokens. */
export const attentionPointSchema = z.object({
  batch: z.number().int().positive(),
  context: z.number().int().nonnegative(),
  ms: z.number().nonnegative(),
});
export type AttentionPoint = z.infer<typeof attentionPointSchema>;

/** One FFN-half measurement: `ms` per decode step (all layers) for `tokens` rows. */
export const ffnPointSchema = z.object({
  tokens: z.number().int().positive(),
  ms: z.number().nonnegative(),
});
export type FfnPoint = z.infer<typeof ffnPointSchema>;

/** One connector measurement: `ms` per layer round trip with `bytes` sent each way. */
export const linkPointSchema = z.object({
  bytes: z.number().int().positive(),
  ms: z.number().nonnegative(),
});
export type LinkPoint = z.infer<typeof linkPointSchema>;

export const connectorCurveSchema = z.object({
  /** Connector name (shared/src/config/connectors.ts: tcp, nccl, peer). */
  connector: z.string().min(1),
  points: z.array(linkPointSchema).min(1),
});
export type ConnectorCurve = z.infer<typeof connectorCurveSchema>;

/** FFN curve of one rank of an EP group of `epSize`: ms per step (all layers) vs tokens of the whole group. */
export const ffnEpCurveSchema = z.object({
  epSize: z.number().int().min(2),
  points: z.array(ffnPointSchema).min(1),
});
export type FfnEpCurve = z.infer<typeof ffnEpCurveSchema>;

/** One MPS SM-share measurement: a role's time at `share` of the SMs over its time at the whole GPU (>= 1). */
export const smSharePointSchema = z.object({
  role: z.enum(['attention', 'ffn']),
  share: z.number().gt(0).max(1),
  slowdown: z.number().min(1),
});
export type SmSharePoint = z.infer<typeof smSharePointSchema>;

export const costProfileSchema = z.object({
  version: z.union([z.literal(1), z.literal(2)]),
  /** When it was measured (ISO 8601). */
  measuredAt: z.string(),
  /** cpu or cuda. */
  backend: z.enum(['cpu', 'cuda']),
  /** The card or CPU model name. */
  device: z.string(),
  /** NVIDIA driver version, or the OS kernel release on CPU. */
  driver: z.string(),
  /** Threads of the CPU backend (0 on CUDA). */
  threads: z.number().int().nonnegative(),
  /**
   * The measuring host: logical CPUs and the 1-minute load average when the run ended
   * (other work on the host inflates CPU curves; a load above the CPUs says so). Optional:
   * profiles written before it was recorded lack it.
   */
  host: z.object({ cpus: z.number().int().positive(), loadAverage1m: z.number().nonnegative() }).optional(),
  /** The git commit of the engine that measured. */
  commit: z.string(),
  /**
   * Where the curves come from: absent or 'measured' for afd-bench profile; 'roofline' for
   * curves computed from a card's published figures and the model's shapes (roofline.ts).
   */
  source: z.enum(['measured', 'roofline']).optional(),
  model: z.object({
    /** arch/preset or a checkpoint directory. */
    name: z.string(),
    numLayers: z.number().int().positive(),
    hiddenSize: z.number().int().positive(),
    /** Bytes per element of the hidden states on the wire (4: fp32 on CPU, 2: bf16 on CUDA). */
    wireBytesPerElement: z.number().int().positive(),
    /** Resident weight bytes of the whole model (one colocated copy). */
    weightBytes: z.number().nonnegative(),
    /** Weight bytes an attention-role rank holds (attention, norms, embeddings, LM head). Optional (version 2). */
    attentionWeightBytes: z.number().nonnegative().optional(),
    /** Weight bytes an FFN-role rank holds (dense FFN, router, every expert). Optional (version 2). */
    ffnWeightBytes: z.number().nonnegative().optional(),
    /** KV-cache bytes per token of context: layers x KV heads x head dim x 2 (K and V) x bytes per element. Optional (version 2). */
    kvBytesPerToken: z.number().nonnegative().optional(),
    /** Routed experts per MoE layer and experts per token; absent for a dense model. Optional (version 2). */
    moe: z.object({ numExperts: z.number().int().positive(), topK: z.number().int().positive() }).optional(),
  }),
  /** Memory of the measuring card (or host RAM on CPU), bytes. Optional (version 2); `plan --gpu-mem-gib` overrides. */
  deviceMemoryBytes: z.number().positive().optional(),
  attention: z.array(attentionPointSchema).min(1),
  ffn: z.array(ffnPointSchema).min(1),
  connectors: z.array(connectorCurveSchema),
  /** FFN curves of one rank per EP group size (absent: the planner scales the ffn curve, and says so). Optional (version 2). */
  ffnEp: z.array(ffnEpCurveSchema).optional(),
  /** The router (gate) alone: ms per step (all layers) vs tokens; the ffn curve includes it. Optional (version 2). */
  gate: z.array(ffnPointSchema).min(1).optional(),
  /** Slowdowns of each role under MPS SM shares (absent: t_full / share^alpha). Optional (version 2). */
  smShares: z.array(smSharePointSchema).optional(),
});
export type CostProfile = z.infer<typeof costProfileSchema>;

/** Parses a profile (JSON text) or throws an error that says what is wrong and where. */
export function parseCostProfile(text: string, source = 'profile'): CostProfile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(`${source}: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const version = (raw as { version?: unknown } | null)?.version;
  if (!(PROFILE_VERSIONS_READ as readonly unknown[]).includes(version)) throw new Error(`${source}: profile version ${String(version)} is not supported (this build reads versions ${PROFILE_VERSIONS_READ.join(' and ')}; measure again with afd-bench profile)`);
  const r = costProfileSchema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new Error(`${source}: ${i.path.join('.') || '(root)'}: ${i.message}`);
  }
  return r.data;
}
