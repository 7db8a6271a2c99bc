/**
 * The body of a grammar worker thread (see grammarProtocol.ts for the two kinds and the
 * messages). It runs from the agent's own bundle: cli/main.ts (and bench/main.ts) start
 * here instead of the command line when `workerData` says so. Tasks run one at a time, in
 * the order they come.
 *
 * xgrammar (@mlc-ai/web-xgrammar, WebAssembly) is loaded on start. Its C++ side reports a
 * bad grammar by printing "[FATAL] <file>:<line>: <why>" (console.error) and then aborting
 * the WebAssembly instance (a RuntimeError "Aborted()"), after which its state cannot be
 * trusted; parts of a spec it ignores it reports as "[WARNING] ..." (console.log). So both
 * are taken over before the module starts (it binds them once): the lines are kept for the
 * reply (warnings make a check fail: nothing may be silently ignored), and after an abort
 * the worker replies with that message and exits; the GrammarService starts a new one.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import type * as Xg from '@mlc-ai/web-xgrammar';
import { ROW_LOST, ROW_REJECTED, ROW_TERMINATED, wordsPerRow, type GrammarReply, type GrammarSource, type GrammarTask, type GrammarWorkerData } from './grammarProtocol.js';
import { grammarVocabOf } from './vocab.js';

type Xgrammar = typeof Xg;

/** xgrammar's log lines ("[FATAL] cpp/x.cc:12: why") since the last take(), without the level and source position. */
class XgrammarLog {
  private lines: string[] = [];

  constructor() {
    for (const stream of ['error', 'log'] as const) {
      const forward = console[stream].bind(console);
      console[stream] = (...args: unknown[]): void => {
        const line = args.map(String).join(' ');
        if (/^\[(FATAL|WARNING|ERROR)\]/.test(line) || line.startsWith('Aborted(')) this.lines.push(line);
        else forward(...args);
      };
    }
  }

  /** Messages of `level` since the last take (all levels are cleared). */
  take(level: 'FATAL' | 'WARNING'): string[] {
    const out = this.lines.filter((l) => l.startsWith(`[${level}]`)).map((l) => l.replace(/^\[\w+\]\s+\S+?:\d+:\s*/, '').trim());
    this.lines = [];
    return out;
  }
}

/** WebAssembly.RuntimeError "Aborted(...)": the instance is dead. */
const isAbort = (err: unknown): boolean => err instanceof Error && (err.name === 'RuntimeError' || err.message.startsWith('Aborted('));

/** The structural tag whose whole output is one regex match (how xgrammar's web build compiles a regex). */
const regexTag = (pattern: string): Xg.StructuralTag => ({ type: 'structural_tag', format: { type: 'regex', pattern } });

/** Parses a source without a vocabulary (the check worker); frees what it built. */
async function parse(xg: Xgrammar, source: GrammarSource): Promise<void> {
  const g =
    source.kind === 'json_schema'
      ? await xg.Grammar.fromJSONSchema(source.schema, source.anyWhitespace, -1)
      : source.kind === 'ebnf'
        ? await xg.Grammar.fromEBNF(source.grammar)
        : await xg.Grammar.fromStructuralTag(regexTag(source.pattern));
  g.dispose();
}

/** Compiles a source against the vocabulary. indent -1: one line when whitespace is fixed (web-xgrammar's default is 2). */
async function compile(xg: Xgrammar, compiler: Xg.GrammarCompiler, source: GrammarSource): Promise<Xg.CompiledGrammar> {
  if (source.kind === 'json_schema') return compiler.compileJSONSchema(source.schema, source.anyWhitespace, -1);
  if (source.kind === 'regex') return compiler.compileStructuralTag(regexTag(source.pattern));
  const g = await xg.Grammar.fromEBNF(source.grammar); // compileGrammar(text) would leak this Grammar
  try {
    return await compiler.compileGrammar(g);
  } finally {
    g.dispose();
  }
}

/**
 * The first JSON Schema compiles of a process run several times slower than the later ones
 * (measured on a 50-field schema: ~110-380 ms, then ~40 ms): V8 runs WebAssembly first in
 * its baseline tier and optimises hot functions in the background (node
 * --no-wasm-dynamic-tiering removes the gap). Compiling a mid-sized schema a few times in
 * both whitespace modes, then giving the background compiles a moment, takes that cost at
 * start (~0.5 s on this thread) instead of in the first requests.
 */
async function warmUp(compiler: Xg.GrammarCompiler): Promise<void> {
  const types = ['string', 'integer', 'number', 'boolean', 'null'];
  const properties = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`warm_${i}`, { type: types[i % types.length] }]));
  const schema = JSON.stringify({ type: 'object', properties: { ...properties, list: { type: 'array', items: { type: 'string' } }, one: { enum: ['a', 'b'] } }, required: Object.keys(properties) });
  for (let i = 0; i < 6; i++) (await compiler.compileJSONSchema(schema, i % 2 === 0, -1)).dispose();
  await new Promise((resolve) => setTimeout(resolve, 200));
}

/** The vocabulary, compiler, compiled grammars and matchers of a match worker. */
class MatchState {
  private readonly cache = new Map<string, Xg.CompiledGrammar>();
  /** Live matchers, or why one could not be made. */
  private readonly matchers = new Map<number, Xg.GrammarMatcher | { error: string }>();

  constructor(
    private readonly xg: Xgrammar,
    private readonly compiler: Xg.GrammarCompiler,
    private readonly data: GrammarWorkerData,
  ) {}

  /** The compiled grammar of `key` (compiled now on a miss; least recently used evicted). */
  async compiled(key: string, source: GrammarSource): Promise<Xg.CompiledGrammar> {
    let g = this.cache.get(key);
    if (g) {
      this.cache.delete(key);
      this.cache.set(key, g);
      return g;
    }
    g = await compile(this.xg, this.compiler, source);
    this.cache.set(key, g);
    // Matchers keep their own reference to the grammar, so evicting one in use is safe.
    for (const [old, grammar] of this.cache) {
      if (this.cache.size <= this.data.cacheSize) break;
      this.cache.delete(old);
      grammar.dispose();
    }
    return g;
  }

  async open(matcherId: number, key: string, source: GrammarSource): Promise<void> {
    const g = await this.compiled(key, source);
    // createGrammarMatcher reads only `handle` and tokenizerInfo().getVocabSize(); handing it
    // the size directly avoids a TokenizerInfo wrapper it would leak per matcher.
    const vocabSize = this.data.vocabSize;
    const shim = { handle: g.handle, tokenizerInfo: () => ({ getVocabSize: () => vocabSize }) } as unknown as Xg.CompiledGrammar;
    this.matchers.set(matcherId, await this.xg.GrammarMatcher.createGrammarMatcher(shim));
  }

  fail(matcherId: number, error: string): void {
    this.matchers.set(matcherId, { error });
  }

  free(ids: number[]): void {
    for (const id of ids) {
      const m = this.matchers.get(id);
      if (m && !('error' in m)) m.dispose();
      this.matchers.delete(id);
    }
  }

  async advance(task: Extract<GrammarTask, { op: 'advance' }>): Promise<Extract<GrammarReply, { type: 'masks' }>> {
    const t0 = performance.now();
    const rows = task.matcherIds.length;
    const words = wordsPerRow(this.data.vocabSize);
    const masks = new Int32Array(rows * words); // masks: [rows, words]
    const status = new Uint8Array(rows);
    const problems: Record<number, string> = {};
    let off = 0;
    for (let i = 0; i < rows; i++) {
      const id = task.matcherIds[i]!;
      const count = task.tokenCounts[i]!;
      const tokens = task.tokens.subarray(off, off + count);
      off += count;
      const m = this.matchers.get(id);
      if (!m || 'error' in m) {
        status[i] = ROW_LOST;
        problems[i] = m ? m.error : 'the grammar worker has no state for this sequence (it restarted)';
        continue;
      }
      const refused = tokens.find((t) => !m.acceptToken(t));
      if (refused !== undefined) {
        status[i] = ROW_REJECTED;
        const why = `the sampled token ${refused} is not allowed by the grammar here (the engine did not apply the mask)`;
        problems[i] = why;
        m.dispose();
        this.fail(id, why);
        continue;
      }
      if (m.isTerminated()) status[i] = ROW_TERMINATED;
      else masks.set(await m.getNextTokenBitmask(), i * words);
    }
    return { type: 'masks', id: task.id, masks, status, problems, ms: performance.now() - t0 };
  }
}

export async function runGrammarWorker(data: GrammarWorkerData, port: MessagePort): Promise<void> {
  const send = (reply: GrammarReply, transfer: ArrayBuffer[] = []): void => port.postMessage(reply, transfer);
  const log = new XgrammarLog(); // before xgrammar starts: it binds console.error once
  const t0 = performance.now();
  let xg: Xgrammar;
  let state: MatchState | null = null;
  let vocabType: string | null = null;
  try {
    xg = await import('@mlc-ai/web-xgrammar');
    if (data.mode === 'match') {
      if (!data.modelDir) throw new Error('a match worker needs the model directory');
      const path = join(data.modelDir, 'tokenizer.json');
      const vocab = grammarVocabOf(JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>);
      vocabType = vocab.vocabType;
      const tokens = vocab.tokens.length > data.vocabSize ? vocab.tokens.slice(0, data.vocabSize) : vocab.tokens;
      const stops = data.stopTokenIds.filter((t) => t < tokens.length);
      const info = await xg.TokenizerInfo.createTokenizerInfo(tokens, vocab.vocabType, vocab.prependSpace, data.vocabSize, stops);
      // Its own cache is off: compiled grammars live in MatchState's bounded one.
      const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
      await warmUp(compiler);
      state = new MatchState(xg, compiler, data);
    } else {
      (await xg.Grammar.builtinJSONGrammar()).dispose(); // starts the WebAssembly instance now, not on the first check
    }
  } catch (err) {
    send({ type: 'failed', message: [...log.take('FATAL'), (err as Error).message].join('; ') });
    return;
  }

  const run = async (task: GrammarTask): Promise<void> => {
    const t = performance.now();
    log.take('FATAL');
    try {
      if (task.op === 'check') {
        await parse(xg, task.source);
        send({ type: 'done', id: task.id, ms: performance.now() - t, warnings: log.take('WARNING') });
      } else if (task.op === 'compile') {
        await state!.compiled(task.key, task.source);
        send({ type: 'done', id: task.id, ms: performance.now() - t, warnings: log.take('WARNING') });
      } else if (task.op === 'open') {
        await state!.open(task.matcherId, task.key, task.source);
      } else if (task.op === 'advance') {
        const reply = await state!.advance(task);
        send(reply, [reply.masks.buffer as ArrayBuffer]);
      } else state?.free(task.matcherIds);
    } catch (err) {
      const fatal = isAbort(err);
      const message = log.take('FATAL').join('; ') || (err as Error).message;
      if (task.op === 'open') state?.fail(task.matcherId, `its grammar could not be compiled: ${message}`);
      else if (task.op !== 'free') send({ type: 'error', id: task.id, message, fatal });
      if (fatal) process.exit(1); // the WebAssembly instance aborted: this worker is done (process.exit ends only the thread)
    }
  };
  let chain = Promise.resolve();
  port.on('message', (task: GrammarTask) => {
    chain = chain.then(() => run(task));
  });
  send({ type: 'ready', loadMs: performance.now() - t0, vocabType });
}
