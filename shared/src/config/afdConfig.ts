/**
 * The AFD config: how a rank joins a topology and how steps run. One strict zod schema
 * (unknown keys are rejected), with defaults, used by the role process (`--config`),
 * the agent's launch spec (the shared `afdOptionsSchema` part) and the console.
 *
 * Defaults: role colocated, rank 0, topology 1A1F, connector tcp, host 127.0.0.1,
 * port 29500 (FFN rank f listens on port + f), ffnHosts [] (every FFN rank at `host`),
 * dbo off with thresholds 32 decode / 512 prefill tokens, gate on the FFN side,
 * CUDA graphs decode-only with buckets 1..512, step deadline 5000 ms, ncclEnv {} plus
 * NCCL_NVLS_ENABLE="0", expert parallelism off (its exchange: epTransport auto), rendezvous
 * timeout 300000 ms, no rendezvous id, FFN ranks bind their own host.
 * The transports (connector, epTransport) and their rules are one table: connectors.ts.
 */
import { z } from 'zod';
import { prefillRanksOf, topologySchema } from '../topology/spec.js';
import { afdConnectorSchema, epTransportSchema } from './connectors.js';

/**
 * Default CUDA-graph batch buckets (tokens per stage). Steps of more rows run eagerly: from
 * 256 tokens the eager step runs the experts on cuBLAS grouped GEMM, which a graph cannot
 * capture, and was faster (Qwen3-30B-A3B on one H200, docs/benchmarks.md: 32.8 ms eager vs
 * 38.2 ms as a graph at batch 256).
 */
export const DEFAULT_BATCH_BUCKETS: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 128];
/** Default base port of the FFN ranks' TCP rendezvous. */
export const DEFAULT_AFD_PORT = 29500;
/** Default base port of the prefill ranks' KV transfer (prefill rank p listens on pdPort + p). */
export const DEFAULT_PD_PORT = 29700;
/**
 * Prefill/decode disaggregation (topologies wPxAyF): how attention ranks use the prefill
 * ranks. A prompt of at least minPromptTokens is prefilled on a prefill rank, which sends
 * the KV of its full blocks (and a hybrid model's recurrent state) back; the attention rank
 * computes the few tokens after the last full block and samples the first token itself.
 */
/**
 * How the KV of a prefill reaches an attention rank: tcp = bytes over the socket (through
 * Node on both sides); peer = ranks on one host map the prefill rank's KV cache (CUDA IPC,
 * or a shared file on the CPU) and only block ids travel, a link that cannot is not used
 * (the prompt is prefilled on the attention rank); auto = peer where it can, else tcp.
 */
export const PD_TRANSPORTS = ['auto', 'tcp', 'peer'] as const;
export type PdTransport = (typeof PD_TRANSPORTS)[number];

export const pdConfigSchema = z.strictObject({
  /** Base port: prefill rank p listens on port + p for the KV transfer (default 29700). */
  port: z.int().min(1).max(65535).default(DEFAULT_PD_PORT),
  /** Shorter prompts are prefilled on the attention rank itself (default 64 tokens). */
  minPromptTokens: z.int().min(1).default(64),
  /** How the KV travels (PD_TRANSPORTS; default auto: peer memory on one host, else TCP). */
  transport: z.enum(PD_TRANSPORTS).default('auto'),
});
export type PdConfig = z.output<typeof pdConfigSchema>;

/** Default step deadline: a peer silent this long fails the step with a clear error. */
export const DEFAULT_STEP_DEADLINE_MS = 5000;
/** Default time a rendezvous waits for the other side. */
export const DEFAULT_RENDEZVOUS_TIMEOUT_MS = 300_000;

/** Dual-batch overlap: split a step into two stages so one stage's attention hides the other's FFN round trip. */
export const dboConfigSchema = z.strictObject({
  /** Split eligible steps into two stages (default false). */
  enabled: z.boolean().default(false),
  /** Minimum tokens of a decode-only step before it is split (default 32). */
  decodeTokenThreshold: z.int().min(1).default(32),
  /** Minimum tokens of a step that contains prefill before it is split (default 512). */
  prefillTokenThreshold: z.int().min(1).default(512),
  /**
   * Where an attention rank shares its GPU with an FFN rank: off (default) turns DBO off for
   * that rank, with a note in the launch log (the two stages' FFN halves read the expert
   * weights twice through the one GPU's memory, so the overlap cannot pay for itself; see
   * docs/agent.md, GPU sharing); keep leaves it as asked.
   */
  onSharedGpu: z.enum(['off', 'keep']).default('off'),
});

/** CUDA graph capture and replay (CUDA backend only; ignored on CPU). */
export const cudaGraphConfigSchema = z.strictObject({
  /** off: always eager. decode-only: capture and replay decode-only steps whose token counts fit a bucket (default). */
  policy: z.enum(['off', 'decode-only']).default('decode-only'),
  /** Tokens-per-stage sizes to capture, strictly ascending positive integers (default 1..512 powers of two). */
  batchBuckets: z
    .array(z.int().min(1).max(65536))
    .min(1, 'needs at least one bucket')
    .default([...DEFAULT_BATCH_BUCKETS])
    .refine((b) => b.every((v, i) => i === 0 || v > b[i - 1]!), 'buckets must be strictly ascending (e.g. [1, 2, 4, 8])'),
});

/** off | decode-only (cudaGraph.policy). */
export type CudaGraphPolicy = z.output<typeof cudaGraphConfigSchema>['policy'];

/**
 * NCCL_* environment for NCCL connectors. NVLink multicast stays off: NCCL_NVLS_ENABLE is
 * always "0" in the output, and any other value is rejected.
 */
export const ncclEnvSchema = z
  .record(z.string().regex(/^NCCL_[A-Z0-9_]+$/, 'keys must be NCCL_* variable names (upper case)'), z.string())
  .default({})
  .refine((env) => env['NCCL_NVLS_ENABLE'] === undefined || env['NCCL_NVLS_ENABLE'] === '0', {
    message: 'NCCL_NVLS_ENABLE must be "0": NVLink multicast is kept off; remove the key or set "0"',
    path: ['NCCL_NVLS_ENABLE'],
  })
  .transform((env) => ({ ...env, NCCL_NVLS_ENABLE: '0' }));

const port = z.int().min(1).max(65535);

/** Options shared by every rank of a launch (what the console sets for the whole topology). */
export const afdOptionsShape = {
  /** Data plane: tcp (CPU / development, any host), nccl (GPU; across hosts) or peer (GPUs of one host, CUDA IPC). Default tcp. */
  connector: afdConnectorSchema.default('tcp'),
  /** Base port: FFN rank f listens on port + f for the rendezvous (default 29500). */
  port: port.default(DEFAULT_AFD_PORT),
  /** Dual-batch overlap settings. */
  dbo: dboConfigSchema.prefault({}),
  /** Run the MoE router (gate) on the attention side and send router logits with hidden states (default false). */
  computeGateOnAttention: z.boolean().default(false),
  /** CUDA graph policy and buckets. */
  cudaGraph: cudaGraphConfigSchema.prefault({}),
  /** A step that waits longer than this for a peer fails with an error naming the peer (default 5000 ms). */
  stepDeadlineMs: z.int().min(1).max(3_600_000).default(DEFAULT_STEP_DEADLINE_MS),
  /** Extra NCCL_* environment for role processes; NCCL_NVLS_ENABLE is forced to "0". */
  ncclEnv: ncclEnvSchema,
  /**
   * Static expert parallelism inside the FFN group (vLLM's --enable-expert-parallel): FFN
   * rank f of y holds only the routed experts e with floor(e * y / E) = f, and the FFN ranks
   * exchange token-expert pairs every MoE layer. FFN rank f then also listens on port + y + f.
   * No effect with one FFN rank or a dense model (default false).
   */
  enableExpertParallel: z.boolean().default(false),
  /**
   * What carries expert parallelism's exchange between the FFN ranks: tcp (host memory over
   * the group's TCP mesh, any hosts; the FFN step runs eagerly), peer (device memory through
   * CUDA IPC: CUDA FFN ranks of one host), nccl (device memory over an NCCL communicator of
   * the FFN ranks: CUDA, a GPU per FFN rank, any hosts) or auto (the connector's own
   * transport: peer under connector peer, nccl under nccl, else tcp); peer and nccl keep the
   * FFN step a CUDA graph. Every FFN rank must use the same (default auto).
   */
  epTransport: epTransportSchema.default('auto'),
  /** Prefill/decode disaggregation: the prefill ranks' KV-transfer port and when attention ranks use them. */
  pd: pdConfigSchema.prefault({}),
  /** How long a rank's rendezvous waits for the other side, ms; 0 = forever (default 300000). */
  rendezvousTimeoutMs: z.int().min(0).max(86_400_000).default(DEFAULT_RENDEZVOUS_TIMEOUT_MS),
};

/**
 * Consecutive ports from the base port the FFN ranks listen on: y for the attention ranks,
 * and y more for the FFN group's mesh with expert parallelism (FFN rank f: port + y + f).
 */
export function afdPortCount(numFfnRanks: number, expertParallel: boolean): number {
  return expertParallel && numFfnRanks > 1 ? 2 * numFfnRanks : numFfnRanks;
}

/** The launch-wide AFD options (strict; every field optional with a default). */
export const afdOptionsSchema = z.strictObject(afdOptionsShape);
export type AfdOptions = z.output<typeof afdOptionsSchema>;
export type AfdOptionsInput = z.input<typeof afdOptionsSchema>;

/** The full config of one rank. */
export const afdConfigSchema = z
  .strictObject({
    /** Role of this process: attention, ffn, colocated (whole model, no AFD) or prefill (whole model, prefill only, for the attention ranks). Default colocated. */
    role: z.enum(['attention', 'ffn', 'colocated', 'prefill']).default('colocated'),
    /** Rank within its role (default 0); must be below that role's rank count. */
    rank: z.int().min(0, 'ranks are zero-based and cannot be negative').default(0),
    /** Topology name ("3A2F") or structured spec, resolved here (the output is a Topology); ignored by colocated (default "1A1F"). */
    topology: topologySchema.prefault('1A1F'),
    /** TCP rendezvous host of the FFN ranks (default 127.0.0.1). */
    host: z.string().min(1).default('127.0.0.1'),
    /** Host of each FFN rank, indexed by FFN rank; empty means every FFN rank is at `host`. */
    ffnHosts: z.array(z.string().min(1)).default([]),
    /** Host of each prefill rank, indexed by prefill rank; empty means every prefill rank is at `host`. */
    prefillHosts: z.array(z.string().min(1)).default([]),
    /** FFN and prefill ranks: the address to bind; "" = its own FFN host, "0.0.0.0" = every interface (default ""). */
    listenHost: z.string().default(''),
    /**
     * Identity of this start of the topology (the agent draws one per launch and restart;
     * default "" = started by hand). Every rank of one start passes the same; an FFN rank
     * refuses attention ranks with another id, so a rank of an earlier start or of another
     * launch on the same ports cannot join it or shut it down.
     */
    rendezvousId: z.string().regex(/^[\w.:-]{0,128}$/, 'must be at most 128 letters, digits or . _ : -; every rank of one start passes the same id').default(''),
    ...afdOptionsShape,
    /** Base port: FFN rank f listens on port + f (default 29500); 0 = an ephemeral port (one FFN rank only: tests and embedders read it back from the FFN server). */
    port: z.int().min(0).max(65535).default(DEFAULT_AFD_PORT),
  })
  .superRefine((cfg, ctx) => {
    const { name, attention, ffn } = cfg.topology; // resolved by its field (this runs only when every field parsed)
    if (cfg.role === 'attention' && cfg.rank >= attention.ranks) {
      ctx.addIssue({ code: 'custom', path: ['rank'], message: `attention rank ${cfg.rank} does not exist in ${name} (valid: 0..${attention.ranks - 1})` });
    }
    if (cfg.role === 'ffn' && cfg.rank >= ffn.ranks) {
      ctx.addIssue({ code: 'custom', path: ['rank'], message: `ffn rank ${cfg.rank} does not exist in ${name} (valid: 0..${ffn.ranks - 1})` });
    }
    const prefill = prefillRanksOf(cfg.topology);
    if (cfg.role === 'prefill' && cfg.rank >= prefill) {
      const valid = prefill === 0 ? 'it has no prefill ranks; name them as wPxAyF, e.g. 1P1A1F' : `valid: 0..${prefill - 1}`;
      ctx.addIssue({ code: 'custom', path: ['rank'], message: `prefill rank ${cfg.rank} does not exist in ${name} (${valid})` });
    }
    if (cfg.prefillHosts.length !== 0 && cfg.prefillHosts.length !== prefill) {
      ctx.addIssue({ code: 'custom', path: ['prefillHosts'], message: `has ${cfg.prefillHosts.length} hosts but ${name} has ${prefill} prefill ranks; give one per prefill rank or none` });
    }
    if (prefill > 0 && cfg.pd.port + prefill - 1 > 65535) {
      ctx.addIssue({ code: 'custom', path: ['pd', 'port'], message: `prefill ranks listen on pd.port..pd.port+${prefill - 1}, which passes 65535; lower pd.port` });
    }
    if (cfg.ffnHosts.length !== 0 && cfg.ffnHosts.length !== ffn.ranks) {
      ctx.addIssue({ code: 'custom', path: ['ffnHosts'], message: `has ${cfg.ffnHosts.length} hosts but ${name} has ${ffn.ranks} FFN ranks; give one per FFN rank or none` });
    }
    if (cfg.port === 0 && ffn.ranks > 1) {
      ctx.addIssue({ code: 'custom', path: ['port'], message: `port 0 (ephemeral) works only with one FFN rank; ${name} has ${ffn.ranks}, whose ports are port + f: give a base port` });
    }
    const ports = afdPortCount(ffn.ranks, cfg.enableExpertParallel);
    if (cfg.port <= 65535 && cfg.port + ports - 1 > 65535) {
      ctx.addIssue({ code: 'custom', path: ['port'], message: `FFN ranks listen on port..port+${ports - 1}, which passes 65535; lower the port` });
    }
  });
export type AfdConfig = z.output<typeof afdConfigSchema>;
export type AfdConfigInput = z.input<typeof afdConfigSchema>;
