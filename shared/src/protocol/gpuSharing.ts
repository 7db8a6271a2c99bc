/**
 * GPU sharing: how the ranks that one agent places on one GPU run there. Without CUDA MPS
 * the driver time-slices their contexts: a rank that waits on the device holds the GPU for
 * its whole slice while the other waits for a turn, so every layer crossing between an
 * attention and an FFN rank on one GPU costs milliseconds. Under MPS (one control daemon
 * per host, started by the agent) their kernels run at once, and each rank may be capped to
 * a share of the GPU's SMs.
 *
 * The launch spec's `gpuSharing` section, each agent's report of what it did per GPU
 * (topology.state), and what `inventory.get` says about MPS on the host.
 */
import { z } from 'zod';

/**
 * auto: MPS where two or more ranks share a GPU and the agent can start (or find) a control
 * daemon, else time-sliced with a warning; mps: MPS for shared GPUs or the launch fails;
 * time-slice: never MPS (the driver's time slicing).
 */
export const GPU_SHARING_MODES = ['auto', 'mps', 'time-slice'] as const;
export const gpuSharingModeSchema = z.enum(GPU_SHARING_MODES);
export type GpuSharingMode = z.infer<typeof gpuSharingModeSchema>;

/** A rank's share of its GPU's SMs under MPS, percent (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE). */
export const smPercentSchema = z.int().min(1, 'an SM share is 1..100 percent').max(100, 'an SM share is 1..100 percent');

/** SM share of every rank of a role on a shared GPU; a role not named gets the whole GPU (no cap). */
export const smShareSchema = z.strictObject({
  /** Attention ranks' share, percent. */
  attention: smPercentSchema.optional(),
  /** FFN ranks' share, percent. */
  ffn: smPercentSchema.optional(),
  /** Colocated ranks' share, percent. */
  colocated: smPercentSchema.optional(),
  /** Prefill ranks' share, percent. */
  prefill: smPercentSchema.optional(),
});
export type SmShare = z.output<typeof smShareSchema>;

/** The launch spec's GPU sharing section (the same for every agent of the launch). */
export const gpuSharingConfigSchema = z.strictObject({
  /** How ranks on one GPU run: auto, mps or time-slice (default auto). */
  mode: gpuSharingModeSchema.default('auto'),
  /**
   * SM shares per role, applied to ranks on GPUs shared under MPS (a placement's own
   * smShare wins); ignored where a rank has its GPU to itself (default none: no cap).
   */
  smShare: smShareSchema.prefault({}),
});
export type GpuSharingConfig = z.output<typeof gpuSharingConfigSchema>;
export type GpuSharingConfigInput = z.input<typeof gpuSharingConfigSchema>;

/** How one GPU's ranks run: alone, together under MPS, or time-sliced by the driver. */
export const gpuSharingKindSchema = z.enum(['exclusive', 'mps', 'time-slice']);
export type GpuSharingKind = z.infer<typeof gpuSharingKindSchema>;

/** One GPU of an agent in a launch, as that agent reports it in topology.state. */
export const gpuShareStateSchema = z.object({
  /** Agent whose GPU it is. */
  agentId: z.string(),
  /** CUDA device index on that host. */
  deviceIndex: z.int().min(0),
  /** The ranks placed on it, each with its SM share under MPS (null: no cap). */
  ranks: z.array(
    z.object({
      /** Role of the rank. */
      role: z.enum(['attention', 'ffn', 'colocated', 'prefill']),
      /** Rank within its role. */
      rank: z.int().min(0),
      /** Percent of the GPU's SMs it may use (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); null = no cap. */
      smShare: smPercentSchema.nullable(),
    }),
  ),
  /** exclusive: one rank; mps: several, at once under MPS; time-slice: several, taking turns. */
  sharing: gpuSharingKindSchema,
  /** Why a shared GPU is time-sliced, or which MPS daemon serves it; null when nothing to say. */
  note: z.string().nullable(),
});
export type GpuShareState = z.infer<typeof gpuShareStateSchema>;

/** An MPS control daemon that answers on this host. */
export const mpsDaemonSchema = z.object({
  /** Its pipe directory (CUDA_MPS_PIPE_DIRECTORY of its clients). */
  pipeDirectory: z.string(),
  /** True when AFD agents started it (under $AFD_HOME/mps) and stop it when their last launch that uses it ends. */
  managedByAgent: z.boolean(),
});

/** CUDA MPS on the agent's host, as `inventory.get` reports it. */
export const mpsStatusSchema = z.object({
  /** The control program (nvidia-cuda-mps-control) the agent found, on PATH or in /usr/local/nvidia/bin; null when none. */
  controlProgram: z.string().nullable(),
  /** The control daemon that answers now, if any (one the agent started, or one run by someone else that it reuses). */
  daemon: mpsDaemonSchema.nullable(),
  /** Why MPS cannot be used on this host; null when it can. */
  unavailable: z.string().nullable(),
});
export type MpsStatus = z.infer<typeof mpsStatusSchema>;

/** What an agent that does not report MPS (an older one) is taken to say. */
export const MPS_NOT_REPORTED: MpsStatus = { controlProgram: null, daemon: null, unavailable: 'this agent does not report MPS (an older version)' };
