/**
 * `afd-agent role <colocated|attention|ffn>` options -> validated settings. The AFD part
 * goes through the shared config schema: --config (file or JSON) first, explicit flags on
 * top, so the agent and a person at a shell get the same checks and messages.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { AFD_CONNECTORS, EP_TRANSPORTS, MAX_DUMMY_SEED, mergeAfdConfig, parseAfdConfigJson, parseLoadFormat, resolveAfdConfig, type AfdConfig, type AfdConfigInput, type LoadFormat, type ProcessRole } from '@afd/shared';
import type { ServingOptions } from '../serving/ServingEngine.js';
import { intFlag } from '../util/intFlag.js';
import { defaultTokenizerWorkers } from '../serving/tokenizer/TokenizerPool.js';

/** Raw commander options of the role command. */
export interface RoleCliOptions {
  model?: string;
  topology?: string;
  rank?: string;
  backend?: string;
  device?: string;
  threads?: string;
  afdHost?: string;
  ffnHosts?: string;
  afdPort?: string;
  /** --connector tcp|nccl|peer (overrides the config's connector). */
  connector?: string;
  apiHost?: string;
  apiPort?: string;
  config?: string;
  apiKey?: string;
  servedModelName?: string;
  maxNumSeqs?: string;
  maxNumBatchedTokens?: string;
  maxModelLen?: string;
  maxQueuedRequests?: string;
  kvCacheMib?: string;
  kvMemoryFraction?: string;
  kvBlockSize?: string;
  tokenizerWorkers?: string;
  /** --rendezvous-id: identity of this start of the topology (the agent draws one per launch/restart). */
  rendezvousId?: string;
  /** --load-format auto|safetensors|dummy. */
  loadFormat?: string;
  /** --seed: seed of dummy weights. */
  seed?: string;
  /** --enable-expert-parallel: static expert parallelism inside the FFN group (config enableExpertParallel). */
  enableExpertParallel?: boolean;
  /** --ep-transport auto|tcp|peer|nccl: expert parallelism's exchange between the FFN ranks (config epTransport). */
  epTransport?: string;
}

export interface RoleSettings {
  role: ProcessRole;
  /** Validated AFD config (role, rank, topology, hosts, port, dbo, gate, graphs, deadline). */
  afd: AfdConfig;
  /** Model directory; null = the built-in model. */
  modelDir: string | null;
  backend: 'cpu' | 'cuda' | 'auto';
  device: number;
  /** CPU threads; 0 = engine default. */
  threads: number;
  apiHost: string;
  apiPort: number;
  apiKey: string | undefined;
  /** `model` name clients use; default: the model directory's base name. */
  servedModelName: string | undefined;
  /** Context window override (capped by the model's max_position_embeddings). */
  maxModelLen: number | undefined;
  /** KV cache size in MiB (engine default when undefined). */
  kvCacheMib: number | undefined;
  /** Share of free device memory the KV cache takes (CUDA); undefined = the engine opener's default. */
  kvMemoryFraction: number | undefined;
  kvBlockSize: number;
  /** Worker threads that tokenise prompts (attention/colocated). */
  tokenizerWorkers: number;
  serving: ServingOptions;
  /** Identity of this start of the topology; "" when started by hand (see AfdLinkOptions.rendezvousId). */
  rendezvousId: string;
  /** Where the weights come from (shared/src/config/loadFormat.ts). */
  loadFormat: LoadFormat;
  /** Seed of dummy weights (every rank of a topology must use the same). */
  seed: number;
}

/** An optional integer flag: undefined when not given. */
function int(flag: string, value: string | undefined, min: number, max?: number): number | undefined {
  return value === undefined ? undefined : intFlag(flag, value, min, max);
}

function fraction(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 0.99) throw new Error(`${flag} must be a number in (0, 0.99], got "${value}"`);
  return n;
}

/** --config: a JSON object literal, or the path of a JSON file. */
function readConfigInput(config: string | undefined): AfdConfigInput {
  if (config === undefined) return {};
  let text = config;
  if (!config.trimStart().startsWith('{')) {
    try {
      text = readFileSync(config, 'utf8');
    } catch (err) {
      throw new Error(`--config ${config}: cannot read the file (${(err as Error).message}); pass a JSON object or a JSON file path`);
    }
  }
  const parsed = parseAfdConfigJson(text);
  if (parsed.ok) return JSON.parse(text) as AfdConfigInput; // merged and validated again below
  throw new Error(`--config: ${parsed.issues.map((i) => `${i.path || 'config'}: ${i.message}`).join('; ')}`);
}

/** An optional flag of a few allowed values: undefined when not given; else one of them, or an error naming them. */
function choiceFlag<T extends string>(flag: string, values: readonly T[], hint: string, value: string | undefined): T | undefined {
  if (value === undefined || (values as readonly string[]).includes(value)) return value as T | undefined;
  throw new Error(`${flag} must be ${values.join(', ')} (${hint}), got "${value}"`);
}

export function resolveRoleSettings(role: string, o: RoleCliOptions): RoleSettings {
  if (role !== 'colocated' && role !== 'attention' && role !== 'ffn') throw new Error(`unknown role "${role}": use colocated, attention or ffn`);
  const backend = o.backend ?? 'auto';
  if (backend !== 'cpu' && backend !== 'cuda' && backend !== 'auto') throw new Error(`--backend must be cpu or cuda, got "${backend}"`);
  const flags: AfdConfigInput = {
    role,
    rank: int('--rank', o.rank, 0),
    topology: o.topology,
    host: o.afdHost,
    ffnHosts: o.ffnHosts === undefined ? undefined : o.ffnHosts.split(',').map((h) => h.trim()),
    port: int('--afd-port', o.afdPort, 1, 65535),
    connector: choiceFlag('--connector', AFD_CONNECTORS, 'peer: GPUs of one host; nccl: across hosts', o.connector),
    ...(o.enableExpertParallel ? { enableExpertParallel: true } : {}),
    epTransport: choiceFlag('--ep-transport', EP_TRANSPORTS, 'peer: CUDA FFN ranks of one host; nccl: CUDA FFN ranks on GPUs of their own, any hosts; tcp: any hosts', o.epTransport),
  };
  const afd = resolveAfdConfig(mergeAfdConfig(readConfigInput(o.config), flags));
  const rendezvousId = o.rendezvousId ?? '';
  if (!/^[\w.:-]{0,128}$/.test(rendezvousId)) {
    throw new Error(`--rendezvous-id must be at most 128 letters, digits or . _ : - (got "${rendezvousId}"); every rank of one start passes the same id`);
  }
  const maxNumSeqs = int('--max-num-seqs', o.maxNumSeqs, 1) ?? 64;
  const maxNumBatchedTokens = int('--max-num-batched-tokens', o.maxNumBatchedTokens, 1) ?? 2048;
  return {
    role,
    afd,
    modelDir: o.model ?? null,
    backend,
    device: int('--device', o.device, 0) ?? 0,
    threads: int('--threads', o.threads, 1) ?? 0,
    apiHost: o.apiHost ?? '127.0.0.1',
    apiPort: int('--api-port', o.apiPort, 0, 65535) ?? 8000,
    apiKey: o.apiKey ?? process.env['AFD_API_KEY'] ?? undefined,
    servedModelName: o.servedModelName,
    maxModelLen: int('--max-model-len', o.maxModelLen, 2),
    kvCacheMib: int('--kv-cache-mib', o.kvCacheMib, 1),
    kvMemoryFraction: fraction('--kv-memory-fraction', o.kvMemoryFraction),
    kvBlockSize: int('--kv-block-size', o.kvBlockSize, 1, 1024) ?? 16,
    tokenizerWorkers: int('--tokenizer-workers', o.tokenizerWorkers, 1, 64) ?? defaultTokenizerWorkers(availableParallelism()),
    serving: {
      scheduler: { maxNumSeqs, maxNumBatchedTokens, longPrefillTokenThreshold: Math.max(1, Math.floor(maxNumBatchedTokens / 2)), dbo: afd.dbo },
      maxQueuedRequests: int('--max-queued-requests', o.maxQueuedRequests, 0) ?? 1024,
    },
    rendezvousId,
    loadFormat: o.loadFormat === undefined ? 'auto' : parseLoadFormat(o.loadFormat),
    seed: int('--seed', o.seed, 0, MAX_DUMMY_SEED) ?? 0,
  };
}
