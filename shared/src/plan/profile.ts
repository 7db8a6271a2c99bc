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
 */
import { z } from 'zod';

export const PROFILE_VERSION = 1;

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

export const costProfileSchema = z.object({
  version: z.literal(PROFILE_VERSION),
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
  }),
  attention: z.array(attentionPointSchema).min(1),
  ffn: z.array(ffnPointSchema).min(1),
  connectors: z.array(connectorCurveSchema),
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
  if (version !== PROFILE_VERSION) throw new Error(`${source}: profile version ${String(version)} is not supported (this build reads version ${PROFILE_VERSION}; measure again with afd-bench profile)`);
  const r = costProfileSchema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new Error(`${source}: ${i.path.join('.') || '(root)'}: ${i.message}`);
  }
  return r.data;
}
