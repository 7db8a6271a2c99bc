/**
 * The messages between the GrammarService (main thread) and its grammar worker threads
 * (grammarWorker.ts). Two kinds of worker run the same code:
 *
 *   - 'check': parses specs without a vocabulary (cheap to start, ~50 ms). A spec that
 *     makes xgrammar's WebAssembly abort only kills this worker, never live matchers;
 *   - 'match': owns the vocabulary (TokenizerInfo), a GrammarCompiler, the compiled
 *     grammars (LRU by spec key) and every sequence's matcher.
 *
 * Replies carry the task's id; 'open' and 'free' have none (their failures show up as a
 * 'lost' row of the next advance).
 */

/** What a grammar worker thread is started with (cli/main.ts and bench/main.ts hand it to runGrammarWorker). */
export interface GrammarWorkerData {
  afdWorker: 'grammar';
  mode: 'check' | 'match';
  /** match: the model directory whose tokenizer.json gives the vocabulary; null for check. */
  modelDir: string | null;
  /** match: allowed-token bits per mask row (the LM head's vocabulary, at least the tokenizer's). */
  vocabSize: number;
  /** match: token ids that end the output where the grammar may end (the model's EOS ids). */
  stopTokenIds: number[];
  /** match: compiled grammars kept (least recently used evicted). */
  cacheSize: number;
}

/** What xgrammar compiles: a GrammarSpec resolved to one of its three inputs. */
export type GrammarSource =
  /** A JSON Schema text; anyWhitespace false = one line with ", " and ": ". */
  | { kind: 'json_schema'; schema: string; anyWhitespace: boolean }
  /** An EBNF grammar with a rule named root. */
  | { kind: 'ebnf'; grammar: string }
  /** A regular expression the whole output matches. */
  | { kind: 'regex'; pattern: string };

export type GrammarTask =
  /** check: parse only; replies done (with xgrammar's warnings) or error. */
  | { op: 'check'; id: number; source: GrammarSource }
  /** match: compile into the cache under `key`; replies done (compile time) or error. */
  | { op: 'compile'; id: number; key: string; source: GrammarSource }
  /** match: a new matcher at the grammar's start (compiling again if `key` was evicted); no reply. */
  | { op: 'open'; matcherId: number; key: string; source: GrammarSource }
  /**
   * match: row i feeds matcher matcherIds[i] its next tokenCounts[i] tokens (from `tokens`,
   * rows in order), then computes its allowed-token mask; replies masks.
   */
  | { op: 'advance'; id: number; matcherIds: Int32Array; tokenCounts: Int32Array; tokens: Int32Array }
  /** match: drop matchers; no reply. */
  | { op: 'free'; matcherIds: number[] };

/** Per advanced row: mask computed; a token it could not accept; no such matcher; accepted a stop token. */
export const ROW_OK = 0;
export const ROW_REJECTED = 1;
export const ROW_LOST = 2;
export const ROW_TERMINATED = 3;

export type GrammarReply =
  | { type: 'ready'; loadMs: number; vocabType: string | null }
  | { type: 'failed'; message: string }
  /** check / compile done: how long it took, and xgrammar's warnings (parts of the spec it would ignore). */
  | { type: 'done'; id: number; ms: number; warnings: string[] }
  /**
   * advance done: `masks` [rows * ceil(vocabSize / 32)] (rows not ROW_OK are zero),
   * `status` [rows] ROW_*, `problems` a message per row that is not ok, `ms` worker time.
   */
  | { type: 'masks'; id: number; masks: Int32Array; status: Uint8Array; problems: Record<number, string>; ms: number }
  /** The task failed; `fatal`: xgrammar aborted and the worker exits after this reply. */
  | { type: 'error'; id: number; message: string; fatal: boolean };

export function isGrammarWorkerData(data: unknown): data is GrammarWorkerData {
  if (typeof data !== 'object' || data === null) return false;
  const d = data as Partial<GrammarWorkerData>;
  return d.afdWorker === 'grammar' && (d.mode === 'check' || d.mode === 'match');
}

/** Words (int32) per mask row: xgrammar's layout, bit t % 32 of word t / 32. */
export function wordsPerRow(vocabSize: number): number {
  return Math.ceil(vocabSize / 32);
}
