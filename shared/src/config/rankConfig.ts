/**
 * The one configuration object of a rank (vLLM's VllmConfig): every option a role process
 * runs with, validated and fully defaulted by one zod schema. The CLI's flags, the
 * console's Topology screen and the agent's launch spec all produce it; the agent hands a
 * role process its rank config whole (`afd-agent role --rank-config <json|file>`), and
 * native reads the same object through one binding conversion. Defaults live in these
 * schemas and nowhere else.
 *
 *   afd      how the rank joins its topology and how steps run (afdConfig.ts)
 *   model    which checkpoint and where its weights come from (modelSource.ts)
 *   serving  scheduler and KV cache limits (servingConfig.ts)
 *   device   compute backend, device index, CPU threads
 *   api      the rank's HTTP server: address, CORS, the OpenAI API's options
 */
import { z } from 'zod';
import { afdConfigSchema } from './afdConfig.js';
import { modelSourceSchema } from './modelSource.js';
import { servingConfigSchema } from './servingConfig.js';

/** Where a rank computes. */
export const deviceConfigSchema = z.strictObject({
  /** cpu, cuda, or auto: cuda when this build and machine have a device, else cpu (default auto). */
  backend: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  /** CUDA device index (default 0). */
  index: z.int().min(0).max(1023).default(0),
  /** CPU worker threads; 0 = the engine's default (all cores) (default 0). */
  threads: z.int().min(0).max(4096).default(0),
});
export type DeviceConfig = z.output<typeof deviceConfigSchema>;

/**
 * CORS of the HTTP API, with the semantics of vLLM's flags of the same names (Starlette's
 * CORSMiddleware): a browser origin gets CORS headers only when it is listed. vLLM allows
 * every origin by default (["*"]); here no origin is allowed until one is listed, so a rank
 * or router answers a browser the way vLLM does with `--allowed-origins '[]'` (preflight 400
 * "Disallowed CORS origin", no Access-Control-Allow-Origin). `["*"]` is vLLM's default.
 */
const corsFields = {
  /** --allowed-origins: origins allowed, e.g. ["https://app.example"]; "*" = any (default []: CORS off). */
  allowedOrigins: z.array(z.string().min(1)).max(256).default([]),
  /** --allowed-methods: methods a preflight may ask for; "*" = DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT (default ["*"]). */
  allowedMethods: z.array(z.string().min(1)).max(64).default(['*']),
  /** --allowed-headers: request headers a preflight may ask for, besides the CORS-safelisted ones; "*" = any (default ["*"]). */
  allowedHeaders: z.array(z.string().min(1)).max(256).default(['*']),
  /** --allow-credentials: answer Access-Control-Allow-Credentials: true (cookies, Authorization) (default false). */
  allowCredentials: z.boolean().default(false),
};

/** The CORS options alone: what the launch spec carries for every rank and its front router. */
export const corsConfigSchema = z.strictObject(corsFields);
export type CorsConfig = z.output<typeof corsConfigSchema>;
export type CorsConfigInput = z.input<typeof corsConfigSchema>;

/** The tool-call formats the OpenAI API parses (--tool-call-parser; vLLM's names). */
export const TOOL_CALL_PARSERS = ['hermes', 'deepseek_v3', 'llama3_json'] as const;
export type ToolCallParserName = (typeof TOOL_CALL_PARSERS)[number];

/** Options of the OpenAI API beyond CORS, the same on every serving rank. */
const openAiFields = {
  /**
   * --tool-call-parser: how tool calls are read from a model's output with tool_choice
   * "auto": hermes (Qwen3, Qwen2.5), deepseek_v3, llama3_json; auto = from the chat
   * template's tool markup (default auto).
   */
  toolCallParser: z.enum(['auto', ...TOOL_CALL_PARSERS]).default('auto'),
  /**
   * --[no-]router-prefix-affinity (a launch's front router): send a request to the attention
   * rank that served its prompt's prefix before, so its prefix cache hits, unless that rank
   * is far busier than the least loaded; off = balance by load alone (default on).
   */
  routerPrefixAffinity: z.boolean().default(true),
};

/** What the launch spec carries for every serving rank (and the router's CORS): the api section without the address. */
export const apiOptionsSchema = z.strictObject({ ...corsFields, ...openAiFields });
export type ApiOptions = z.output<typeof apiOptionsSchema>;

/** The rank's HTTP server (OpenAI API on serving ranks; health, metrics and stats on every rank). */
export const apiConfigSchema = z.strictObject({
  /** Bind address (default 127.0.0.1). */
  host: z.string().min(1).default('127.0.0.1'),
  /** Port; 0 = ephemeral (default 8000). */
  port: z.int().min(0).max(65535).default(8000),
  ...corsFields,
  ...openAiFields,
});
export type ApiConfig = z.output<typeof apiConfigSchema>;

export const rankConfigSchema = z.strictObject({
  /** Role, rank, topology, rendezvous and the AFD step options. */
  afd: afdConfigSchema.prefault({}),
  /** Checkpoint, load format, dummy seed, served name. */
  model: modelSourceSchema.prefault({}),
  /** Scheduler and KV cache limits. */
  serving: servingConfigSchema.prefault({}),
  /** Backend, device, threads. */
  device: deviceConfigSchema.prefault({}),
  /** The rank's HTTP server: address, CORS, the OpenAI API's options. */
  api: apiConfigSchema.prefault({}),
});
export type RankConfig = z.output<typeof rankConfigSchema>;
export type RankConfigInput = z.input<typeof rankConfigSchema>;
