/**
 * Wires an engine and a tokenizer into a serving attention/colocated rank: scheduler loop,
 * vLLM + afd metrics, the serving routes (OpenAI API, /tokenize, /detokenize) and the HTTP
 * server. Used by the role process and by the API tests (with a fake engine).
 */
import { Registry } from 'prom-client';
import type { CorsConfig, PdStats, RankStats, ServedModelInfo, ToolCallParserName } from '@afd/shared';
import type { Logger } from '../util/logger.js';
import { ModelRoutes } from './api/modelRoutes.js';
import { OpenAiRoutes } from './api/openaiRoutes.js';
import { RankHttpServer, type Readiness } from './api/RankHttpServer.js';
import { ResponsesRoutes } from './api/responses/ResponsesRoutes.js';
import { TokenizeRoutes } from './api/tokenizeRoutes.js';
import type { CacheConfigInfo } from './metrics/cacheConfigInfo.js';
import type { EngineLike } from './engineLike.js';
import { registerRankMetrics } from './metrics/rankMetrics.js';
import { registerTokenizerMetrics } from './metrics/tokenizerMetrics.js';
import { registerPreprocessMetrics } from './metrics/requestPreprocess.js';
import { ServingMetrics } from './metrics/ServingMetrics.js';
import { ServingEngine, type ServingOptions } from './ServingEngine.js';
import type { TextTokenizer } from './tokenizer/TextTokenizer.js';
import { InlineEncoder, type PromptEncoder } from './tokenizer/PromptEncoder.js';

export interface ApiServerOptions {
  engine: EngineLike;
  tokenizer: TextTokenizer;
  /** Tokenises prompts (default: inline on the event loop; a role passes a TokenizerPool). */
  encoder?: PromptEncoder;
  servedModelName: string;
  modelPath: string;
  /** What GET /v1/models says about the model beyond its name. */
  modelInfo?: ServedModelInfo | undefined;
  serving: ServingOptions;
  apiKey?: string | undefined;
  version: string;
  log?: Logger | undefined;
  /** Registry to add metrics to (default: a new one). */
  registry?: Registry;
  /** An HTTP server that is already listening (the role starts it before loading); default: a new one. */
  http?: RankHttpServer;
  /** Extra not-ready condition (e.g. loading, FFN peer lost); null when fine. */
  externalNotReady?: () => string | null;
  /** CORS of a new HTTP server (default: no origin allowed); a given `http` has its own. */
  cors?: CorsConfig | undefined;
  /** --tool-call-parser: how tool_choice "auto" output is read (default auto: from the chat template). */
  toolCallParser?: ToolCallParserName | 'auto';
  /** KV options as configured, for vllm:cache_config_info (block size and count come from the engine). */
  cacheOptions?: Pick<CacheConfigInfo, 'gpuMemoryUtilization' | 'kvCacheMemoryBytes'>;
  /** Prefill/decode disaggregation counters (RankStats.pd); omitted = none. */
  pdStats?: () => PdStats;
}

export interface ApiServer {
  serving: ServingEngine;
  metrics: ServingMetrics;
  http: RankHttpServer;
  registry: Registry;
  /** Native counters with the scheduler's KV occupancy filled in. */
  rankStats(): RankStats;
  readiness(): Readiness;
  /** Stops HTTP, aborts requests, closes the encoder; does not close the engine. */
  close(): Promise<void>;
}

export function createApiServer(o: ApiServerOptions): ApiServer {
  const serving = new ServingEngine(o.engine, o.tokenizer, o.serving);
  const registry = o.registry ?? new Registry();
  const blocks = serving.scheduler.blocks;
  const gauges = {
    numRunning: () => serving.scheduler.numRunning,
    numWaiting: () => serving.scheduler.numWaiting,
    kvUsage: () => blocks.usage,
    numPreemptions: () => serving.scheduler.numPreemptions,
  };
  const cacheConfig = { blockSize: o.engine.info.kvBlockSize, numGpuBlocks: o.engine.info.numKvBlocks, enablePrefixCaching: blocks.prefixCaching, ...o.cacheOptions };
  const metrics = new ServingMetrics(registry, o.servedModelName, gauges, { maxModelLen: serving.maxContextTokens, cacheConfig });
  serving.observe(metrics);
  const sharing = serving.scheduler.promptSharing;
  const rankStats = (): RankStats => ({
    ...o.engine.stats(),
    kv: { blocksUsed: blocks.numUsedBlocks, blocksTotal: blocks.numBlocks, blocksCached: blocks.numCachedBlocks, prefixQueryTokens: sharing.numLookedUpTokens, prefixHitTokens: sharing.numSharedTokens },
    ...(o.pdStats ? { pd: o.pdStats() } : {}),
  });
  registerRankMetrics(registry, rankStats);
  const readiness = (): Readiness => {
    const ext = o.externalNotReady?.() ?? null;
    if (ext) return { ready: false, reason: ext };
    return serving.readiness;
  };
  const encoder: PromptEncoder = o.encoder ?? new InlineEncoder(o.tokenizer);
  if (encoder.stats) registerTokenizerMetrics(registry, () => encoder.stats!());
  const served = { servedModelName: o.servedModelName, modelPath: o.modelPath, maxModelLen: serving.maxContextTokens, modelInfo: o.modelInfo };
  const openaiContext = { serving, tokenizer: o.tokenizer, encoder, servedModelName: o.servedModelName, modelPath: o.modelPath, toolCallParser: o.toolCallParser ?? 'auto' };
  const routes = {
    models: new ModelRoutes(served),
    openai: new OpenAiRoutes(openaiContext),
    responses: new ResponsesRoutes(openaiContext),
    tokenize: new TokenizeRoutes({ tokenizer: o.tokenizer, encoder, served }),
  };
  const http =
    o.http ?? new RankHttpServer({ readiness, registry, stats: rankStats, serving: () => metrics.snapshot(), routes, apiKey: o.apiKey, version: o.version, log: o.log, cors: o.cors });
  http.attachRoutes(routes, registerPreprocessMetrics(registry, o.servedModelName));
  return {
    serving,
    metrics,
    http,
    registry,
    rankStats,
    readiness,
    async close() {
      await serving.close();
      await http.close();
      await encoder.close();
    },
  };
}
