/**
 * What an agent reports about its host (`inventory.get`): CPU, memory, devices (the CPU
 * always, CUDA devices from the native probe), compiled backends and library versions.
 */
import { z } from 'zod';
import { MPS_NOT_REPORTED, mpsStatusSchema } from './gpuSharing.js';

/** Compute backends a rank can run on. */
export const backendSchema = z.enum(['cpu', 'cuda']);
export type Backend = z.infer<typeof backendSchema>;

/** The host CPU as a device (always present). */
export const cpuDeviceSchema = z.object({
  /** Device kind. */
  kind: z.literal('cpu'),
  /** Always 0: the CPU is one device. */
  index: z.literal(0),
  /** CPU model name, e.g. "AMD EPYC 9654". */
  name: z.string(),
  /** Logical cores. */
  cores: z.number().int().positive(),
  /** Host memory, bytes. */
  totalMemoryBytes: z.number().nonnegative(),
  /** Host memory available now, bytes. */
  freeMemoryBytes: z.number().nonnegative(),
});

/** One visible CUDA device, as the native probe reported it. */
export const cudaDeviceSchema = z.object({
  /** Device kind. */
  kind: z.literal('cuda'),
  /** CUDA device index (what `--device` takes). */
  index: z.number().int().nonnegative(),
  /** Device name, e.g. "NVIDIA H200". */
  name: z.string(),
  /** Device memory, bytes. */
  totalMemoryBytes: z.number().nonnegative(),
  /** Device memory free at probe time, bytes. */
  freeMemoryBytes: z.number().nonnegative(),
  /** Compute capability "major.minor", e.g. "9.0". */
  computeCapability: z.string(),
  /** Streaming multiprocessors. */
  multiProcessors: z.number().int().nonnegative(),
  /**
   * Whether ranks sharing this GPU can run under CUDA MPS (the host's control program is
   * there and the device supports MPS), and why not; an older agent reports nothing (unavailable).
   */
  mps: z
    .object({
      /** True when the agent can run this GPU's shared ranks under MPS. */
      available: z.boolean(),
      /** Why not; null when available. */
      reason: z.string().nullable(),
    })
    .default({ available: false, reason: 'not reported by this agent' }),
});

/** A device a rank can be placed on. */
export const deviceSchema = z.discriminatedUnion('kind', [cpuDeviceSchema, cudaDeviceSchema]);
export type Device = z.infer<typeof deviceSchema>;

/** A run-time loaded library (cuBLAS, cuBLASLt, NCCL). */
export const libraryStatusSchema = z.object({
  /** Whether dlopen succeeded. */
  loaded: z.boolean(),
  /** The soname that loaded; empty when none did. */
  soname: z.string(),
  /** Library version, e.g. "2.28.3"; empty when unknown. */
  version: z.string(),
  /** Why it did not load; empty when it did. */
  error: z.string(),
});

/** A model directory the agent can launch without the console naming a path. */
export const localModelSchema = z.object({
  /** Display name, e.g. "tiny-qwen3-moe". */
  name: z.string(),
  /** Absolute directory of the HF checkpoint on the agent host. */
  dir: z.string(),
  /** Routed experts per MoE layer (config.json num_experts / num_local_experts); absent for dense models. */
  numExperts: z.int().positive().optional(),
});

/**
 * The model this agent serves when a launch names no model directory: what its ranks load
 * (the agent resolves it the same way when it launches).
 */
export const defaultModelSchema = z.object({
  /** demo: the trained demo model this install carries; tiny: the random-weight tiny Qwen3-MoE, made on first use. */
  kind: z.enum(['demo', 'tiny']),
  /** Its folder name, also the name the API serves it under, e.g. "afd-demo-moe". */
  name: z.string().min(1),
  /** Its folder on the agent's host (the tiny model's may not exist until the first launch). */
  dir: z.string().min(1),
  /** One line about it (the model folder's afd-model-info.json description); null when it has none. */
  description: z.string().nullable(),
});
export type DefaultModel = z.infer<typeof defaultModelSchema>;

/** The agent's host as `inventory.get` returns it. */
export const inventorySchema = z.object({
  /** Host name. */
  hostname: z.string(),
  /** OS platform, e.g. "linux". */
  platform: z.string(),
  /** CPU architecture, e.g. "x64". */
  arch: z.string(),
  /** CPU summary. */
  cpu: z.object({
    /** CPU model name. */
    model: z.string(),
    /** Logical cores. */
    cores: z.number().int().positive(),
  }),
  /** Host memory. */
  memory: z.object({
    /** Total bytes. */
    totalBytes: z.number().nonnegative(),
    /** Available bytes now. */
    freeBytes: z.number().nonnegative(),
  }),
  /** Devices: the CPU first (always), then every visible CUDA device. */
  devices: z.array(deviceSchema).min(1),
  /** Backends compiled into the addon; always contains "cpu". */
  backends: z.array(backendSchema).min(1),
  /** Version strings. */
  versions: z.object({
    /** afd-agent version. */
    agent: z.string(),
    /** Node.js version, e.g. "20.19.0". */
    node: z.string(),
    /** Native addon version. */
    addon: z.string(),
    /** Addon build variant: cuda when the CUDA backend was compiled in. */
    addonVariant: backendSchema,
    /** CUDA runtime the addon was built with, e.g. "13.0"; null for CPU builds. */
    cudaRuntime: z.string().nullable(),
    /** CUDA version the driver supports, e.g. "13.0"; null when no driver. */
    cudaDriver: z.string().nullable(),
  }),
  /** Run-time loaded libraries. */
  libraries: z.object({
    /** cuBLAS. */
    cublas: libraryStatusSchema,
    /** cuBLASLt. */
    cublasLt: libraryStatusSchema,
    /** NCCL. */
    nccl: libraryStatusSchema,
  }),
  /** Why no CUDA device is visible (or why the probe degraded to CPU); empty when devices were found. */
  cudaError: z.string(),
  /** Models available on this host (the demo model, models under $AFD_HOME/models). */
  models: z.array(localModelSchema).default([]),
  /**
   * Address other hosts reach this agent's ranks at (`serve --advertise-host`, else its
   * specific non-loopback --host); null when the agent does not know one (clients then
   * use the host name of the URL they reached it at).
   */
  advertiseHost: z.string().min(1).nullable().default(null),
  /** The model a launch without a model directory serves here; null from an agent that does not say (older ones). */
  defaultModel: defaultModelSchema.nullable().default(null),
  /** CUDA MPS on this host: the control program, a daemon that answers, or why MPS cannot be used. */
  mps: mpsStatusSchema.default(MPS_NOT_REPORTED),
});
export type Inventory = z.infer<typeof inventorySchema>;
