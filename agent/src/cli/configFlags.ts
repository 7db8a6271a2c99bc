/**
 * The command-line face of the configuration: one table of flags, each naming the field of
 * the config it sets (a path into the rank config, whose sections the launch spec shares:
 * `model`, `serving`, `afd`, and `api` for its CORS and OpenAI API fields; or, for launch
 * only, into the launch spec's `gpuSharing` section). `afd-agent role` and
 * `afd-agent launch` both register their flags from it and turn what was given into a
 * sparse config input, which the shared schemas validate and default. A flag carries no default of its own: an absent flag leaves
 * the field to the schema. Adding an option here is one row.
 */
import { resolve } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { AFD_CONNECTORS, EP_TRANSPORTS, GPU_SHARING_MODES, LOAD_FORMATS, MAX_DUMMY_SEED, PD_TRANSPORTS, TOOL_CALL_PARSERS, transportChoicesHelp, type SmShare } from '@afd/shared';
import { intFlag } from '../util/intFlag.js';

/** The commands that take config flags. */
export type ConfigCommand = 'role' | 'launch';

export interface ConfigFlag {
  /** commander's flags text, e.g. "--max-num-seqs <n>". */
  flags: string;
  /** The field it sets: a path into the rank config (and, for model/serving/afd, the launch spec). */
  path: readonly string[];
  /** Help text; the field's default is the schema's (named here for the reader). */
  description: string;
  /** The value from its text; throws naming the flag. Absent: the text itself (a boolean flag: true). */
  parse?: (value: string, flag: string) => unknown;
  /** Commands that take it. */
  on: readonly ConfigCommand[];
}

const both: readonly ConfigCommand[] = ['role', 'launch'];
const roleOnly: readonly ConfigCommand[] = ['role'];
const launchOnly: readonly ConfigCommand[] = ['launch'];

const int =
  (min: number, max?: number) =>
  (value: string, flag: string): number =>
    intFlag(flag, value, min, max);

function oneOf(values: readonly string[]) {
  return (value: string, flag: string): string => {
    if (!values.includes(value)) throw new Error(`${flag} must be one of ${values.join(', ')} (got "${value}")`);
    return value;
  };
}

function fraction(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 0.99) throw new Error(`${flag} must be a number in (0, 0.99], got "${value}"`);
  return n;
}

/** A JSON list of strings, as vLLM's --allowed-origins and its siblings take them (json.loads). */
function jsonStringList(value: string, flag: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new Error(`${flag} must be a JSON list of strings, e.g. '["https://app.example"]' (got ${JSON.stringify(value)}: ${(err as Error).message})`);
  }
  if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string')) throw new Error(`${flag} must be a JSON list of strings, e.g. '["*"]' (got ${value})`);
  return parsed as string[];
}

/** "attention=40,ffn=60": each role's percent of a shared GPU's SMs under MPS. */
export function smShareList(value: string, flag: string): SmShare {
  const roles = ['attention', 'ffn', 'colocated', 'prefill'] as const;
  const out: Record<string, number> = {};
  for (const part of value.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\w+)=(\d+)$/.exec(part);
    const role = m?.[1] as (typeof roles)[number] | undefined;
    if (!m || !role || !roles.includes(role)) throw new Error(`${flag} takes role=percent pairs of ${roles.join(', ')}, e.g. attention=40,ffn=60 (got "${part}")`);
    const percent = Number(m[2]);
    if (percent < 1 || percent > 100) throw new Error(`${flag}: ${role}=${m[2]} is not a percentage of SMs from 1 to 100`);
    if (out[role] !== undefined) throw new Error(`${flag} names ${role} twice`);
    out[role] = percent;
  }
  if (Object.keys(out).length === 0) throw new Error(`${flag} needs at least one role=percent pair, e.g. attention=40,ffn=60`);
  return out;
}

function hostList(value: string): string[] {
  return value.split(',').map((h) => h.trim());
}

/** Every config flag of role and launch. */
export const CONFIG_FLAGS: readonly ConfigFlag[] = [
  // model
  { flags: '--model <dir>', path: ['model', 'dir'], on: both, parse: (v) => resolve(v), description: 'HF checkpoint directory (default: the built-in model: the demo model, else a random tiny one in $AFD_HOME/models); a relative path is resolved against this directory' },
  { flags: '--served-model-name <name>', path: ['model', 'servedModelName'], on: both, description: 'model name clients send (default: the model directory name)' },
  { flags: '--load-format <format>', path: ['model', 'loadFormat'], on: both, parse: oneOf(LOAD_FORMATS), description: 'weights: auto (the safetensors), safetensors, or dummy (random weights generated on each rank\'s device from --seed; config.json and a tokenizer suffice) (default auto)' },
  { flags: '--seed <n>', path: ['model', 'seed'], on: both, parse: int(0, MAX_DUMMY_SEED), description: 'seed of dummy weights; every rank of a topology uses the same (default 0)' },
  // serving
  { flags: '--max-num-seqs <n>', path: ['serving', 'maxNumSeqs'], on: both, parse: int(1, 1 << 20), description: 'most sequences per step of each rank (default 64)' },
  { flags: '--max-num-batched-tokens <n>', path: ['serving', 'maxNumBatchedTokens'], on: both, parse: int(1, 1 << 24), description: 'token budget per step (default 2048; connector peer and the device exchanges of expert parallelism size their buffers from it: give every rank the same)' },
  { flags: '--max-model-len <n>', path: ['serving', 'maxModelLen'], on: both, parse: int(2, 1 << 24), description: 'context window cap (default: the model config)' },
  { flags: '--max-queued-requests <n>', path: ['serving', 'maxQueuedRequests'], on: both, parse: int(0, 1 << 24), description: 'waiting requests per rank beyond this get 429 (default 1024)' },
  { flags: '--kv-cache-mib <n>', path: ['serving', 'kvCacheMib'], on: both, parse: int(1, 1 << 24), description: 'KV cache size per rank in MiB (default: 256 on the CPU; on CUDA see --kv-memory-fraction)' },
  { flags: '--kv-memory-fraction <f>', path: ['serving', 'kvMemoryFraction'], on: both, parse: fraction, description: 'CUDA: share of the device memory free after the weights for the KV cache (default 0.9)' },
  { flags: '--kv-block-size <n>', path: ['serving', 'kvBlockSize'], on: both, parse: int(1, 1024), description: 'tokens per KV block (default 16)' },
  { flags: '--enable-prefix-caching', path: ['serving', 'enablePrefixCaching'], on: both, description: 'reuse the KV of prompt prefixes computed before, by content (vLLM\'s automatic prefix caching) (default on, except for a model with linear-attention layers: off, and this flag an error)' },
  { flags: '--no-enable-prefix-caching', path: ['serving', 'enablePrefixCaching'], on: both, description: 'turn prefix caching off: every prompt is computed in full' },
  { flags: '--tokenizer-workers <n>', path: ['serving', 'tokenizerWorkers'], on: both, parse: int(1, 64), description: 'worker threads that tokenise prompts off the event loop (default: one per 8 cores, 1 to 4)' },
  // api: CORS of the OpenAI API (vLLM's flags; a launch applies them at its front router and its ranks)
  { flags: '--allowed-origins <json>', path: ['api', 'allowedOrigins'], on: both, parse: jsonStringList, description: 'browser origins allowed by CORS, a JSON list: \'["https://app.example"]\', \'["*"]\' = any (vLLM\'s default) (default []: CORS off, preflights get 400)' },
  { flags: '--allowed-methods <json>', path: ['api', 'allowedMethods'], on: both, parse: jsonStringList, description: 'methods a CORS preflight may ask for, a JSON list (default ["*"]: DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT)' },
  { flags: '--allowed-headers <json>', path: ['api', 'allowedHeaders'], on: both, parse: jsonStringList, description: 'request headers a CORS preflight may ask for besides the safelisted ones, a JSON list (default ["*"]: any)' },
  { flags: '--allow-credentials', path: ['api', 'allowCredentials'], on: both, description: 'CORS responses carry Access-Control-Allow-Credentials: true (default off)' },
  // api: the OpenAI API (every serving rank of a launch)
  { flags: '--tool-call-parser <name>', path: ['api', 'toolCallParser'], on: both, parse: oneOf(['auto', ...TOOL_CALL_PARSERS]), description: `how tool calls are read from the output with tool_choice "auto": ${TOOL_CALL_PARSERS.join(', ')}, or auto = from the chat template's tool markup (default auto)` },
  // api: the launch's front router
  { flags: '--router-prefix-affinity', path: ['api', 'routerPrefixAffinity'], on: launchOnly, description: 'the front router sends a request to the attention rank that served its prompt prefix before (its prefix cache hits), unless that rank is far busier than the least loaded (default on)' },
  { flags: '--no-router-prefix-affinity', path: ['api', 'routerPrefixAffinity'], on: launchOnly, description: 'the front router balances by load alone' },
  // afd: how steps run (every rank of a launch)
  { flags: '--connector <name>', path: ['afd', 'connector'], on: both, parse: oneOf(AFD_CONNECTORS), description: `AFD data plane: ${transportChoicesHelp(false)} (default: launch: nccl on cuda, tcp on cpu; role: tcp)` },
  { flags: '--afd-port <port>', path: ['afd', 'port'], on: both, parse: int(1, 65535), description: 'base port of the FFN rendezvous: FFN rank f listens on port + f (default 29500)' },
  { flags: '--dbo', path: ['afd', 'dbo', 'enabled'], on: both, description: 'dual-batch overlap: two stages per step, one stage\'s attention hides the other\'s FFN round trip (default off)' },
  { flags: '--gate-on-attention', path: ['afd', 'computeGateOnAttention'], on: both, description: 'run the MoE router (gate) on the attention ranks (default off)' },
  { flags: '--step-deadline-ms <n>', path: ['afd', 'stepDeadlineMs'], on: both, parse: int(1, 3_600_000), description: 'a step that waits longer than this for a peer fails, naming the peer (default 5000)' },
  { flags: '--enable-expert-parallel', path: ['afd', 'enableExpertParallel'], on: both, description: 'split the MoE experts over the FFN ranks (expert e on FFN rank floor(e * y / E)); they exchange tokens every MoE layer; FFN rank f also listens on --afd-port + y + f (default off)' },
  { flags: '--ep-transport <name>', path: ['afd', 'epTransport'], on: both, parse: oneOf(EP_TRANSPORTS), description: `with --enable-expert-parallel, the FFN ranks' exchange: ${transportChoicesHelp(true)}; peer and nccl keep FFN steps CUDA graphs, tcp runs them eagerly; every FFN rank must agree (default auto)` },
  { flags: '--pd-port <port>', path: ['afd', 'pd', 'port'], on: both, parse: int(1, 65535), description: 'prefill/decode disaggregation (topologies wPxAyF): prefill rank p listens for KV transfers on port + p (default 29700)' },
  { flags: '--pd-min-prompt-tokens <n>', path: ['afd', 'pd', 'minPromptTokens'], on: both, parse: int(1), description: 'with prefill ranks, shorter prompts (or what an attention rank does not hold in its prefix cache) are prefilled on the attention rank itself (default 64)' },
  { flags: '--pd-transport <mode>', path: ['afd', 'pd', 'transport'], on: both, parse: oneOf(PD_TRANSPORTS), description: 'how a prefill\'s KV reaches the attention rank: peer = ranks on one host copy it from the prefill rank\'s memory (CUDA IPC, or a shared file on cpu), only block ids on the wire, and a link that cannot is not used; tcp = bytes over the socket; auto = peer where it can, else tcp (default auto)' },
  // gpuSharing: ranks that share a GPU (launch only; its agents start CUDA MPS for them)
  { flags: '--gpu-sharing <mode>', path: ['gpuSharing', 'mode'], on: launchOnly, parse: oneOf(GPU_SHARING_MODES), description: 'ranks on one GPU: auto = run them at once under CUDA MPS (the agent starts nvidia-cuda-mps-control -d, or reuses a running daemon) where it can, else time-sliced with a warning; mps = MPS or the launch fails; time-slice = never MPS (the driver takes turns: much slower) (default auto)' },
  { flags: '--sm-share <role=percent,...>', path: ['gpuSharing', 'smShare'], on: launchOnly, parse: smShareList, description: 'under MPS, each role\'s share of a shared GPU\'s SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), e.g. attention=40,ffn=60 (default: no cap)' },
  // afd: where this rank is (role processes only; a launch decides these per rank)
  { flags: '--topology <xAyF>', path: ['afd', 'topology'], on: roleOnly, description: 'AFD topology, e.g. 2A1F, or 2P1A1F with 2 prefill ranks (default 1A1F; ignored by colocated)' },
  { flags: '--rank <n>', path: ['afd', 'rank'], on: roleOnly, parse: int(0), description: 'rank within its role (default 0)' },
  { flags: '--afd-host <host>', path: ['afd', 'host'], on: roleOnly, description: 'TCP rendezvous host of the FFN ranks (default 127.0.0.1)' },
  { flags: '--ffn-hosts <h0,h1,...>', path: ['afd', 'ffnHosts'], on: roleOnly, parse: hostList, description: 'host of each FFN rank (default: all at --afd-host)' },
  { flags: '--prefill-hosts <h0,h1,...>', path: ['afd', 'prefillHosts'], on: roleOnly, parse: hostList, description: 'host of each prefill rank (default: all at --afd-host)' },
  { flags: '--rendezvous-id <id>', path: ['afd', 'rendezvousId'], on: roleOnly, description: 'identity of this start of the topology: FFN ranks admit only attention ranks with the same id (the agent sets a fresh one per launch/restart; default none)' },
  // device and api (role processes only)
  { flags: '--backend <cpu|cuda>', path: ['device', 'backend'], on: roleOnly, parse: oneOf(['cpu', 'cuda', 'auto']), description: 'compute backend (default: cuda when a device is visible, else cpu)' },
  { flags: '--device <n>', path: ['device', 'index'], on: roleOnly, parse: int(0, 1023), description: 'CUDA device index (default 0)' },
  { flags: '--threads <n>', path: ['device', 'threads'], on: roleOnly, parse: int(1, 4096), description: 'CPU threads (default: all cores)' },
  { flags: '--api-host <host>', path: ['api', 'host'], on: roleOnly, description: 'HTTP bind address (default 127.0.0.1)' },
  { flags: '--api-port <port>', path: ['api', 'port'], on: roleOnly, parse: int(0, 65535), description: 'HTTP port, 0 = ephemeral (default 8000)' },
];

/** The flags a command takes. */
export function configFlagsOf(command: ConfigCommand): ConfigFlag[] {
  return CONFIG_FLAGS.filter((f) => f.on.includes(command));
}

/** commander's attribute name of a flag ("--max-num-seqs <n>" -> "maxNumSeqs"). */
export function attributeOf(flag: ConfigFlag): string {
  return new Option(flag.flags).attributeName();
}

/** The flag's name alone ("--max-num-seqs"). */
export function flagName(flag: ConfigFlag): string {
  return flag.flags.split(' ')[0]!;
}

/**
 * Commands whose flags are parsed by commander as it reads them (a bad value stops the
 * command before it does anything). A role process keeps them as text until
 * configInputFromFlags, so it reports a bad value as its `failed` event like any other error.
 */
const parsedByCommander: readonly ConfigCommand[] = ['launch'];

/** Registers a command's config flags. */
export function registerConfigFlags(cmd: Command, command: ConfigCommand): Command {
  for (const flag of configFlagsOf(command)) {
    const option = new Option(flag.flags, flag.description);
    const parse = flag.parse;
    if (parse && parsedByCommander.includes(command)) {
      option.argParser((value: string) => {
        try {
          return parse(value, flagName(flag));
        } catch (err) {
          throw new InvalidArgumentError((err as Error).message);
        }
      });
    }
    cmd.addOption(option);
  }
  return cmd;
}

/** Sets a nested field of a plain object, creating the objects on its path. */
function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    node = (typeof next === 'object' && next !== null ? next : (node[key] = {})) as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

/**
 * The sparse config input of the flags a user gave (commander's parsed options, text
 * values); each value is parsed and checked here, with an error that names the flag.
 */
export function configInputFromFlags(opts: Record<string, unknown>, command: ConfigCommand): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const flag of configFlagsOf(command)) {
    const raw = opts[attributeOf(flag)];
    if (raw === undefined) continue;
    const value = typeof raw === 'string' && flag.parse && !parsedByCommander.includes(command) ? flag.parse(raw, flagName(flag)) : raw;
    setPath(out, flag.path, value);
  }
  return out;
}
