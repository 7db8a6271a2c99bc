/**
 * One role process: report progress, load the model for the role, serve HTTP, report
 * ready, and stop gracefully. Attention and colocated ranks serve the OpenAI API; FFN
 * ranks serve only /health, /metrics and /afd/stats while the native FFN loop runs.
 *
 *   progress(loading) -> listening(apiUrl) -> [progress(rendezvous), progress(warmup)] -> ready
 *   ... SIGTERM -> stopped
 */
import { basename } from 'node:path';
import { Registry } from 'prom-client';
import { emptyRankStats, type RankStats } from '@afd/shared';
import type { Logger } from '../util/logger.js';
import { RankHttpServer } from '../serving/api/RankHttpServer.js';
import { createApiServer, type ApiServer } from '../serving/createApiServer.js';
import type { EngineLike, EngineModelInfo } from '../serving/engineLike.js';
import type { GrammarService } from '../serving/grammar/GrammarService.js';
import type { ServingOptions } from '../serving/ServingEngine.js';
import { TextTokenizer } from '../serving/tokenizer/TextTokenizer.js';
import type { PromptEncoder } from '../serving/tokenizer/PromptEncoder.js';
import { prepareDefaultModel } from '../model/defaultModel.js';
import { readServedModelInfo } from '../model/servedModelInfo.js';
import type { EngineOpener } from './engineOpener.js';
import type { FfnServerOpener, FfnServerLike } from './ffnServer.js';
import { prefixCachingOf } from './prefixCaching.js';
import { remotePrefillOf, startPrefillServing, type PrefillServing, type RemotePrefillRole } from './pdRole.js';
import { RoleEvents } from './RoleEvents.js';
import type { RankConfig } from '@afd/shared';

export interface RoleDeps {
  openEngine: EngineOpener;
  openFfnServer: FfnServerOpener;
  events: RoleEvents;
  log: Logger;
  version: string;
  /** Bearer key serving ranks require on /v1; undefined = open (never part of the config). */
  apiKey?: string;
  /** Tokeniser of prompts off the event loop (the CLI starts a TokenizerPool); omitted = inline. */
  openEncoder?: (modelDir: string, tokenizer: TextTokenizer) => Promise<PromptEncoder>;
  /** Structured outputs (xgrammar workers; the CLI starts them from its own bundle); omitted = a grammar is a 400. */
  openGrammar?: (modelDir: string, info: EngineModelInfo) => GrammarService;
}

export interface RunningRole {
  apiUrl: string;
  /** FFN ranks: resolves with the reason when the loop ends on its own (attention sent shutdown). */
  done: Promise<string> | null;
  /** Graceful stop: refuse new work, end streams, close the engine (attention tells its FFN ranks). */
  stop(): Promise<void>;
}

export async function runRole(config: RankConfig, deps: RoleDeps): Promise<RunningRole> {
  const { events, log } = deps;
  let phase: string = 'loading';
  let peerProblem: string | null = null;
  let api: ApiServer | null = null;
  let engine: EngineLike | null = null;
  let ffn: FfnServerLike | null = null;
  let encoding: Promise<PromptEncoder> | undefined;
  let grammar: GrammarService | undefined;
  let prefillServing: PrefillServing | null = null;
  let remotePrefill: RemotePrefillRole | null = null;
  const registry = new Registry();
  const { role, rank } = config.afd;
  const stats = (): RankStats => api?.rankStats() ?? ffn?.stats() ?? emptyRankStats(role, rank, 0, 1);
  const readiness = (): { ready: boolean; reason: string | null } => {
    if (peerProblem) return { ready: false, reason: peerProblem };
    if (phase !== 'ready') return { ready: false, reason: phase };
    return api ? api.readiness() : { ready: true, reason: null };
  };
  const http = new RankHttpServer({ readiness, registry, stats, serving: () => api?.metrics.snapshot() ?? null, routes: null, servesOpenAi: role !== 'ffn', apiKey: deps.apiKey, version: deps.version, log, cors: config.api });

  events.progress('loading', 0, 0, 'starting');
  const apiUrl = await http.listen(config.api.port, config.api.host);
  events.emit({ type: 'listening', apiUrl });
  log.info({ apiUrl, role, rank }, 'http listening');

  try {
    const modelDir = config.model.dir ?? (await prepareDefaultModel((m) => events.progress('loading', 0, 0, m)));
    const onProgress = (p: 'loading' | 'rendezvous' | 'warmup', done: number, total: number, message?: string): void => {
      phase = p;
      events.progress(p, done, total, message);
    };
    const onPeerState = (problem: string | null): void => {
      if (problem !== peerProblem) log.warn({ problem }, problem ? 'FFN peer lost' : 'FFN peers back');
      peerProblem = problem;
    };
    if (role === 'ffn') {
      ffn = await deps.openFfnServer({ modelDir, config, onProgress, onPeerState });
      const { registerRankMetrics } = await import('../serving/metrics/rankMetrics.js');
      registerRankMetrics(registry, stats);
      log.info(ffn.description);
    } else {
      const tokenizer = await TextTokenizer.fromDir(modelDir);
      // The pool's workers load their tokenizers while the engine loads.
      encoding = deps.openEncoder?.(modelDir, tokenizer);
      encoding?.catch(() => undefined); // awaited below; a load failure first must not leave it unhandled
      // A prefill rank runs the whole model (a colocated engine) and serves prefills to the attention ranks.
      const opened = await deps.openEngine({ modelDir, role: role === 'prefill' ? 'colocated' : role, config, onProgress, onPeerState });
      engine = opened.engine;
      log.info(opened.description);
      // Its match worker loads the vocabulary and warms up meanwhile (~2 s on one core), so a first constrained request does not wait.
      grammar = deps.openGrammar?.(modelDir, engine.info);
      grammar?.warm();
      const encoder = encoding ? await encoding : undefined;
      const servedModelName = config.model.servedModelName ?? basename(modelDir);
      const prefix = prefixCachingOf(config.serving.enablePrefixCaching, engine.info);
      if (prefix.note) log.info(prefix.note);
      remotePrefill = remotePrefillOf(config, engine, log);
      const pdRole = { remote: remotePrefill, served: (): PrefillServing | null => prefillServing };
      api = createApiServer({
        engine,
        tokenizer,
        ...(encoder ? { encoder } : {}),
        servedModelName,
        modelPath: modelDir,
        modelInfo: await readServedModelInfo(modelDir, servedModelName),
        serving: { ...servingOptionsOf(config, engine.info), ...(grammar ? { grammar } : {}), ...(remotePrefill ? { remotePrefill: remotePrefill.prefiller } : {}) },
        apiKey: deps.apiKey,
        version: deps.version,
        log,
        registry,
        http,
        externalNotReady: () => peerProblem,
        toolCallParser: config.api.toolCallParser,
        cacheOptions: { gpuMemoryUtilization: config.serving.kvMemoryFraction, kvCacheMemoryBytes: config.serving.kvCacheMib === null ? null : config.serving.kvCacheMib * 2 ** 20 },
        ...(role === 'prefill' || remotePrefill ? { pdStats: () => pdRole.remote?.stats() ?? pdRole.served()!.stats() } : {}),
      });
      await warmup(api, onProgress);
      // A prefill rank takes KV-transfer requests once its engine has warmed up.
      if (role === 'prefill') prefillServing = await startPrefillServing(config, api.serving, engine, log);
    }
    phase = 'ready';
    events.emit({ type: 'ready' });
    log.info({ apiUrl }, 'ready');
  } catch (err) {
    await prefillServing?.close();
    remotePrefill?.close();
    await http.close();
    await api?.close();
    await encoding?.then((e) => e.close(), () => undefined);
    await grammar?.close();
    await engine?.close().catch(() => undefined);
    await ffn?.close().catch(() => undefined);
    throw err;
  }

  let stopping: Promise<void> | null = null;
  return {
    apiUrl,
    done: ffn?.done ?? null,
    stop() {
      stopping ??= (async () => {
        phase = 'stopping';
        await prefillServing?.close();
        await api?.close();
        remotePrefill?.close();
        await http.close();
        await grammar?.close();
        await engine?.close();
        await ffn?.close();
        events.emit({ type: 'stopped' });
      })();
      return stopping;
    },
  };
}

/**
 * The serving engine's limits from the rank config (DBO thresholds come from its afd
 * section) and the loaded model (prefixCachingOf). Throws for --enable-prefix-caching on a
 * model with linear-attention layers.
 */
export function servingOptionsOf(config: RankConfig, info: Pick<EngineModelInfo, 'numStateSlots'> = {}): ServingOptions {
  const { maxNumSeqs, maxNumBatchedTokens, maxQueuedRequests, enablePrefixCaching } = config.serving;
  return {
    scheduler: { maxNumSeqs, maxNumBatchedTokens, longPrefillTokenThreshold: Math.max(1, Math.floor(maxNumBatchedTokens / 2)), dbo: config.afd.dbo },
    maxQueuedRequests,
    prefixCaching: prefixCachingOf(enablePrefixCaching, info).enabled,
  };
}

/** One short greedy generation through the whole stack before reporting ready. */
async function warmup(api: ApiServer, onProgress: (p: 'warmup', done: number, total: number) => void): Promise<void> {
  onProgress('warmup', 0, 1);
  const handle = api.serving.submit({ promptIds: [0, 1, 2, 3], sampling: { temperature: 0, topK: 0, topP: 1, seed: 0 }, maxTokens: 2, ignoreEos: true });
  for await (const ev of handle.events) if (ev.type === 'error') throw new Error(`warmup step failed: ${ev.error.message}`);
  onProgress('warmup', 1, 1);
}
