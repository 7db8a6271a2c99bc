/**
 * Structured outputs for the serving loop: compiles GrammarSpecs with xgrammar, keeps one
 * matcher per constrained sequence, and computes every step's allowed-token masks, all in
 * worker threads (grammarWorker.ts), so the event loop never waits for a compile.
 *
 *   const g = await grammar.compile(spec);          // 400 naming spec.param when unusable
 *   const m = grammar.newMatcher(g);                 // per sequence (sample)
 *   const { masks, status } = await grammar.advance([{ matcher: m, newTokens }, ...]);
 *   grammar.free(m);                                 // when the sequence ends
 *
 * A spec goes through three gates: checks without xgrammar (grammarSource.ts: shape, JSON
 * Schema validity and keywords xgrammar would ignore), a parse in the check worker (no
 * vocabulary; xgrammar aborting on a bad grammar kills only that worker, which restarts),
 * then the compile in the match worker, which owns the vocabulary, the compiled grammars
 * and the matchers. Compiled grammars are cached by a hash of their source, here and in
 * the worker (least recently used evicted); failures are cached too, so a bad spec sent
 * again costs nothing. Both workers start on first use (warm() starts the match worker,
 * whose vocabulary takes ~0.4 s to load for a 150k vocabulary).
 *
 * A compile and the masks of a step run on the same worker, one after the other: a cold
 * compile (tens of ms) delays the next step's masks by as much.
 */
import { ServingError } from '../ServingError.js';
import { ROW_LOST, ROW_OK, ROW_REJECTED, ROW_TERMINATED, wordsPerRow, type GrammarSource } from './grammarProtocol.js';
import { keyedSourceOf } from './grammarSource.js';
import type { GrammarSpec } from './grammarSpec.js';
import { GrammarWorkerClient, GrammarWorkerLost } from './GrammarWorkerClient.js';
import { fillRow, setTokens } from './maskBits.js';
import { SchemaChecker } from './schemaCheck.js';

export interface GrammarServiceOptions {
  /** The agent bundle whose entry runs grammar workers (afd-agent.cjs, or afd-bench.cjs). */
  script: string;
  /** Model directory with tokenizer.json. */
  modelDir: string;
  /** The LM head's vocabulary size (bits per mask row). */
  vocabSize: number;
  /** Token ids that end the output where the grammar may end (the model's EOS ids). */
  stopTokenIds: readonly number[];
  /** Compiled grammars kept (default 64); failures kept: 4x as many. */
  cacheSize?: number;
}

/** A compiled grammar (cached: the same spec gives the same handle). */
export interface GrammarHandle {
  readonly key: string;
  readonly source: GrammarSource;
  /** Worker time of its check and compile (ms), when it was compiled. */
  readonly checkMs: number;
  readonly compileMs: number;
}

/** One sequence's matcher (its state lives in the match worker of `generation`). */
export interface GrammarMatcherRef {
  readonly id: number;
  readonly generation: number;
}

/** ok: the row is the grammar's mask; terminated: it accepted a stop token (row: stop tokens only); rejected / lost: its state is gone (row: every token). */
export type MaskRowStatus = 'ok' | 'terminated' | 'rejected' | 'lost';

export interface AdvanceItem {
  matcher: GrammarMatcherRef;
  /** Tokens sampled since its last advance (accepted before the mask is computed). */
  newTokens: readonly number[];
}

export interface AdvanceResult {
  /** [rows * wordsPerRow] allowed-token bitmasks, rows in batch order. */
  masks: Int32Array;
  wordsPerRow: number;
  status: MaskRowStatus[];
  /** Why a row is rejected or lost; null for the others. */
  problems: (string | null)[];
  /** Time the match worker spent (ms). */
  workerMs: number;
}

const STATUS: Record<number, MaskRowStatus> = { [ROW_OK]: 'ok', [ROW_REJECTED]: 'rejected', [ROW_LOST]: 'lost', [ROW_TERMINATED]: 'terminated' };

/** A small LRU over a Map (insertion order = recency). */
function remember<V>(map: Map<string, V>, key: string, value: V, limit: number): void {
  map.delete(key);
  map.set(key, value);
  for (const old of map.keys()) {
    if (map.size <= limit) break;
    map.delete(old);
  }
}

export class GrammarService {
  private readonly checker: GrammarWorkerClient;
  private readonly matcher: GrammarWorkerClient;
  private readonly schemas = new SchemaChecker();
  private readonly handles = new Map<string, GrammarHandle>();
  private readonly failures = new Map<string, string>();
  private readonly compiling = new Map<string, Promise<GrammarHandle>>();
  private readonly stopTokenIds: number[];
  private readonly cacheSize: number;
  private nextMatcherId = 0;
  readonly wordsPerRow: number;

  constructor(opts: GrammarServiceOptions) {
    this.cacheSize = opts.cacheSize ?? 64;
    this.stopTokenIds = opts.stopTokenIds.filter((t) => Number.isInteger(t) && t >= 0 && t < opts.vocabSize);
    this.wordsPerRow = wordsPerRow(opts.vocabSize);
    const data = { afdWorker: 'grammar' as const, modelDir: opts.modelDir, vocabSize: opts.vocabSize, stopTokenIds: this.stopTokenIds, cacheSize: this.cacheSize };
    this.checker = new GrammarWorkerClient(opts.script, { ...data, mode: 'check', modelDir: null });
    this.matcher = new GrammarWorkerClient(opts.script, { ...data, mode: 'match' });
  }

  /** Starts the match worker now (it loads the vocabulary), so the first constrained request does not wait for it. */
  warm(): void {
    this.matcher.ensure();
  }

  /** The match worker's load time and detected vocabulary type, once it has started. */
  get loaded(): { loadMs: number; vocabType: string | null } | null {
    return this.matcher.loaded;
  }

  /**
   * The compiled grammar of a spec. Rejects with a 400 (ServingError invalid_request,
   * param = spec.param) saying what is wrong when the spec cannot be used.
   */
  async compile(spec: GrammarSpec): Promise<GrammarHandle> {
    if (this.stopTokenIds.length === 0) {
      throw new ServingError('invalid_request', `${spec.param}: structured outputs need an end-of-sequence token to end the output, and this model has none (config.json eos_token_id); omit it`, spec.param);
    }
    const { key, source } = keyedSourceOf(spec, this.schemas);
    const hit = this.handles.get(key);
    if (hit) {
      remember(this.handles, key, hit, this.cacheSize);
      return hit;
    }
    const failed = this.failures.get(key);
    if (failed !== undefined) throw new ServingError('invalid_request', `${spec.param} cannot be used: ${failed}`, spec.param);
    let pending = this.compiling.get(key);
    if (!pending) {
      pending = this.build(key, source).finally(() => this.compiling.delete(key));
      this.compiling.set(key, pending);
    }
    try {
      return await pending;
    } catch (err) {
      if (err instanceof BadSpec) throw new ServingError('invalid_request', `${spec.param} cannot be used: ${err.message}`, spec.param);
      throw err;
    }
  }

  /** Check, then compile; a spec xgrammar refuses (or would partly ignore) is a BadSpec, remembered. */
  private async build(key: string, source: GrammarSource): Promise<GrammarHandle> {
    const badSpec = (message: string): BadSpec => {
      remember(this.failures, key, message, this.cacheSize * 4);
      return new BadSpec(message);
    };
    // A check queued behind a spec that aborted the worker is lost with it: it gets a second try.
    const checkOnce = (): ReturnType<GrammarWorkerClient['request']> => this.checker.request({ op: 'check', source });
    const check = await checkOnce()
      .catch((err: unknown) => (err instanceof GrammarWorkerLost ? checkOnce() : Promise.reject(err)))
      .catch((err: Error) => {
        throw badSpec(`checking it stopped the grammar worker (${err.message})`);
      });
    if (check.type === 'error') throw badSpec(check.message);
    if (check.type === 'done' && check.warnings.length > 0) throw badSpec(`the grammar engine would ignore part of it: ${check.warnings.join('; ')}`);
    let done;
    try {
      done = await this.matcher.request({ op: 'compile', key, source });
    } catch (err) {
      if (err instanceof GrammarWorkerLost) throw new ServingError('engine_error', `compiling the grammar failed: ${err.message}`);
      throw err;
    }
    if (done.type === 'error') throw badSpec(done.message);
    const handle: GrammarHandle = { key, source, checkMs: check.type === 'done' ? check.ms : 0, compileMs: done.type === 'done' ? done.ms : 0 };
    remember(this.handles, key, handle, this.cacheSize);
    return handle;
  }

  /** A matcher at the grammar's start, for one sequence. */
  newMatcher(handle: GrammarHandle): GrammarMatcherRef {
    const id = this.nextMatcherId++;
    const generation = this.matcher.ensure();
    this.matcher.send({ op: 'open', matcherId: id, key: handle.key, source: handle.source });
    return { id, generation };
  }

  /**
   * Feeds each matcher its new tokens and computes its next mask, all rows in one array.
   * Rejects (GrammarWorkerLost) only when the match worker stops meanwhile; a row whose
   * matcher cannot go on is marked rejected / lost instead.
   */
  async advance(batch: readonly AdvanceItem[]): Promise<AdvanceResult> {
    const rows = batch.length;
    const status: MaskRowStatus[] = new Array(rows).fill('lost');
    const problems: (string | null)[] = new Array(rows).fill(null);
    const generation = this.matcher.generation;
    const tokenCounts = new Int32Array(rows);
    const matcherIds = new Int32Array(rows).fill(-1);
    batch.forEach((item, i) => {
      if (item.matcher.generation !== generation) problems[i] = 'the grammar worker restarted, and with it this sequence\'s grammar state was lost';
      else {
        matcherIds[i] = item.matcher.id;
        tokenCounts[i] = item.newTokens.length;
      }
    });
    const tokens = Int32Array.from(batch.flatMap((item, i) => (matcherIds[i]! >= 0 ? item.newTokens : [])));
    let masks: Int32Array = new Int32Array(rows * this.wordsPerRow);
    let workerMs = 0;
    if (matcherIds.some((id) => id >= 0)) {
      const reply = await this.matcher.request({ op: 'advance', matcherIds, tokenCounts, tokens }, [tokens.buffer as ArrayBuffer]);
      if (reply.type === 'error') throw new GrammarWorkerLost(`the grammar worker failed to compute masks: ${reply.message}`);
      if (reply.type !== 'masks') throw new Error(`grammar worker: unexpected reply ${reply.type} to advance`);
      masks = reply.masks;
      workerMs = reply.ms;
      reply.status.forEach((s, i) => {
        if (matcherIds[i]! < 0) return;
        status[i] = STATUS[s] ?? 'lost';
        problems[i] = reply.problems[i] ?? null;
      });
    }
    status.forEach((s, i) => {
      if (s === 'terminated') setTokens(masks, i, this.wordsPerRow, this.stopTokenIds);
      else if (s !== 'ok') fillRow(masks, i, this.wordsPerRow, -1);
    });
    return { masks, wordsPerRow: this.wordsPerRow, status, problems, workerMs };
  }

  /** Drops a sequence's matcher (finished, aborted or failed). */
  free(matcher: GrammarMatcherRef): void {
    if (matcher.generation === this.matcher.generation) this.matcher.send({ op: 'free', matcherIds: [matcher.id] });
  }

  async close(): Promise<void> {
    await Promise.all([this.checker.close(), this.matcher.close()]);
  }
}

/** A spec xgrammar refused (the message says why); becomes a 400 naming the request's param. */
class BadSpec extends Error {}
