/**
 * Tokenisation off the event loop: a fixed set of worker threads (node:worker_threads),
 * each with its own copy of the model's tokenizer, fed from one FIFO queue, one task per
 * worker at a time. A 1 MB prompt takes about a second to tokenise; on the event loop
 * that second is a gap in every other stream of the rank, here it is not.
 *
 * Built on node:worker_threads directly rather than piscina / tinypool: those start their
 * own worker entry file, which a single-file esbuild bundle (the shipped afd-agent.cjs)
 * does not have. The workers run the agent's own bundle (`script`), whose entry hands
 * them to runTokenizerWorker (cli/main.ts).
 *
 * Short prompts (at most `inlineMaxChars`) are tokenised on the calling thread: that
 * costs well under a millisecond and never waits behind a long prompt in the queue.
 * Prompts up to `laneMaxChars` (tens of milliseconds of work) have a lane of their own: one
 * more worker that takes only them, so a 3 KB prompt never waits behind 7.5 MB ones (the
 * general workers take short tasks too when no long one waits). A task whose caller no
 * longer wants it (its `signal` aborts: the client left) leaves the queue, or, running,
 * stops at its next chunk; a prompt far over its `atMostTokens` stops being tokenised once
 * it passes them (boundedEncode.ts) and is refused with PromptTooLong.
 *
 * Each worker caches the long pieces of the chats it tokenised (SegmentedEncoder), so a
 * chat goes to the worker its conversation went to before (conversationAffinity.ts): a
 * free worker first takes the oldest task that prefers it, and only then the oldest task
 * that has waited `stealAfterMs` for its busy preferred worker (another worker re-tokenises
 * the whole history, which costs more than a short wait). Otherwise each turn would
 * re-tokenise the part of its history that another worker had seen.
 */
import { Worker } from 'node:worker_threads';
import { ServingError } from '../ServingError.js';
import type { ChatMessage } from './ChatTemplate.js';
import { type ChatEncodeOptions, type EncodeOptions, type EncoderStats, PromptTooLong, type PromptEncoder, type TaskControl } from './PromptEncoder.js';
import type { TextTokenizer } from './TextTokenizer.js';
import type { TokenizerReply, TokenizerTask, TokenizerWorkerData } from './tokenizerWorker.js';
import { conversationKey } from './conversationAffinity.js';

export interface TokenizerPoolOptions {
  /** The afd-agent bundle (its entry runs the tokenizer worker when started as one). */
  script: string;
  modelDir: string;
  /** Worker threads (at least 1). */
  workers: number;
  /** The caller's tokenizer, for short prompts. */
  inline: TextTokenizer;
  /** Prompts of at most this many characters are tokenised inline (default 2048; 0 = never). */
  inlineMaxChars?: number;
  /** Tasks of at most this many characters take the short lane (default 32768; 0 = no lane). */
  laneMaxChars?: number;
  /** Tasks waiting for a worker beyond this are refused with queue_full (429); default 1024. */
  maxQueued?: number;
  /** A chat waits this long for the worker of its conversation before another takes it (default 25 ms). */
  stealAfterMs?: number;
}

/** A task without its id (assigned when it is posted). */
type TaskBody =
  | { op: 'encode'; text: string; addSpecialTokens: boolean; atMost?: number }
  | { op: 'chat'; messages: ChatMessage[]; options: ChatEncodeOptions; atMost?: number }
  | { op: 'decode'; ids: number[] };

interface Pending {
  body: TaskBody;
  /** Characters of work, for the lane. */
  chars: number;
  /** Chats: their conversation's key (conversationAffinity.ts), which picks the worker they prefer. */
  affinity?: number;
  /** performance.now() when it was queued. */
  queuedAt: number;
  /** Token ids (encode, chat) or text (decode). */
  resolve(result: number[] | string): void;
  reject(err: Error): void;
  /** Set once the caller has been answered (an abort answers before the worker does). */
  settled: boolean;
}

type Lane = 'any' | 'short';

interface Slot {
  worker: Worker;
  lane: Lane;
  task: (Pending & { id: number }) | null;
  /** The worker's piece-cache counters as of its last answer. */
  pieces: { hits: number; misses: number };
}

const abortedError = (): ServingError => new ServingError('client_closed', 'the client closed the connection before its prompt was tokenised');

const closedError = (): ServingError => new ServingError('not_ready', 'the tokenizer pool is closed (the rank is stopping); retry on another rank');

/** Default worker count: one per 8 cores, 1 to 4. */
export function defaultTokenizerWorkers(cores: number): number {
  return Math.max(1, Math.min(4, Math.floor(cores / 8)));
}

export class TokenizerPool implements PromptEncoder {
  private readonly slots: Slot[] = [];
  /** Every live worker, ready or still loading (close terminates them all). */
  private readonly workers = new Set<Worker>();
  private readonly queue: Pending[] = [];
  private nextId = 0;
  private closed = false;
  private readonly outcomes: EncoderStats['outcomes'] = { done: 0, too_long: 0, cancelled: 0, failed: 0 };
  /** Piece-cache counters of workers that are gone (a replaced worker's count stays counted). */
  private readonly goneWorkerPieces = { hits: 0, misses: 0 };
  /** Dispatches again once a waiting chat may be stolen by a free worker (armStealTimer). */
  private stealTimer: NodeJS.Timeout | null = null;
  /** Set when a worker could not load the tokenizer: every task fails with it. */
  private broken: ServingError | null = null;

  private constructor(private readonly opts: TokenizerPoolOptions) {}

  /** Starts the workers and waits until each has loaded the tokenizer. */
  static async start(opts: TokenizerPoolOptions): Promise<TokenizerPool> {
    if (!Number.isInteger(opts.workers) || opts.workers < 1) throw new Error(`tokenizer workers must be an integer >= 1, got ${opts.workers}`);
    const pool = new TokenizerPool(opts);
    const lanes: Lane[] = [...Array.from({ length: opts.workers }, (): Lane => 'any'), ...((opts.laneMaxChars ?? 32_768) > 0 ? (['short'] as const) : [])];
    try {
      await Promise.all(lanes.map((lane) => pool.spawn(lane)));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  /** Worker threads serving, the short lane's included. */
  get size(): number {
    return this.slots.length;
  }

  /** Tasks waiting for a worker. */
  get queued(): number {
    return this.queue.length;
  }

  stats(): EncoderStats {
    const pieceCache = { ...this.goneWorkerPieces };
    for (const s of this.slots) {
      pieceCache.hits += s.pieces.hits;
      pieceCache.misses += s.pieces.misses;
    }
    return { waiting: this.queue.length, outcomes: { ...this.outcomes }, pieceCache };
  }

  private spawn(lane: Lane): Promise<void> {
    const data: TokenizerWorkerData = { afdWorker: 'tokenizer', modelDir: this.opts.modelDir };
    const worker = new Worker(this.opts.script, { workerData: data, stdout: false, stderr: false });
    worker.unref();
    this.workers.add(worker);
    worker.once('exit', () => this.workers.delete(worker));
    const slot: Slot = { worker, lane, task: null, pieces: { hits: 0, misses: 0 } };
    return new Promise((resolve, reject) => {
      let ready = false;
      worker.on('message', (reply: TokenizerReply) => {
        if (reply.type === 'ready') {
          ready = true;
          this.slots.push(slot);
          this.dispatch();
          resolve();
        } else if (reply.type === 'failed') {
          const err = new ServingError('engine_error', `tokenizer worker could not load the tokenizer of ${this.opts.modelDir}: ${reply.message}`);
          this.broken = err;
          void worker.terminate();
          reject(err);
        } else this.settle(slot, reply);
      });
      worker.on('error', (err) => {
        if (!ready) reject(new Error(`tokenizer worker failed to start from ${this.opts.script}: ${err.message}`));
        else this.lost(slot, `tokenizer worker failed: ${err.message}`);
      });
      worker.on('exit', (code) => {
        if (!ready) reject(new Error(`tokenizer worker exited with code ${code} before loading the tokenizer (script ${this.opts.script})`));
        else this.lost(slot, `tokenizer worker exited with code ${code}`);
      });
    });
  }

  /** A worker died: fail its task, replace it (unless closing), keep the queue going. */
  private lost(slot: Slot, why: string): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return;
    this.slots.splice(i, 1);
    this.goneWorkerPieces.hits += slot.pieces.hits;
    this.goneWorkerPieces.misses += slot.pieces.misses;
    if (slot.task) {
      this.outcomes.failed++;
      this.answer(slot.task, () => slot.task!.reject(new ServingError('engine_error', `${why} while tokenising this prompt`)));
    }
    slot.task = null;
    if (this.closed) return;
    this.spawn(slot.lane).catch((err: Error) => {
      for (const p of this.queue.splice(0)) this.answer(p, () => p.reject(err));
    });
  }

  /** Answers the caller once (an aborted task is answered before its worker is done). */
  private answer(task: Pending, how: () => void): void {
    if (task.settled) return;
    task.settled = true;
    how();
  }

  private settle(slot: Slot, reply: Extract<TokenizerReply, { id: number }>): void {
    const task = slot.task;
    if (!task || task.id !== reply.id) return;
    slot.task = null;
    if (reply.type === 'done' && reply.pieces) slot.pieces = reply.pieces;
    this.outcomes[reply.type === 'done' || reply.type === 'text' ? 'done' : reply.type === 'tooLong' ? 'too_long' : reply.type === 'cancelled' ? 'cancelled' : 'failed']++;
    this.answer(task, () => {
      if (reply.type === 'done') task.resolve(Array.from(reply.ids));
      else if (reply.type === 'text') task.resolve(reply.text);
      else if (reply.type === 'tooLong') task.reject(new PromptTooLong(reply.atLeast));
      else if (reply.type === 'cancelled') task.reject(abortedError());
      else task.reject(new Error(reply.message));
    });
    this.dispatch();
  }

  /** Whether `slot` may run `task`: the short lane takes short tasks only. */
  private eligible(slot: Slot, task: Pending): boolean {
    return slot.lane === 'any' || this.isShort(task.chars);
  }

  /** The worker a chat prefers: its conversation's key over the workers that may run it (none for other tasks). */
  private preferred(task: Pending): Slot | undefined {
    if (task.affinity === undefined) return undefined;
    const able = this.slots.filter((s) => this.eligible(s, task));
    return able[task.affinity % able.length];
  }

  /** A chat may go to another worker than its own (it has waited long enough for a busy one). */
  private stealable(p: Pending, now: number): boolean {
    const own = this.preferred(p);
    return own === undefined || (own.task !== null && now - p.queuedAt >= (this.opts.stealAfterMs ?? 25));
  }

  /**
   * The next task for `slot`: the oldest that prefers it, else the oldest it may run that is
   * stealable (one whose own worker is free is taken by it in the same dispatch).
   */
  private take(slot: Slot, now: number): Pending | undefined {
    let i = this.queue.findIndex((p) => this.preferred(p) === slot);
    if (i < 0) i = this.queue.findIndex((p) => this.eligible(slot, p) && this.stealable(p, now));
    return i < 0 ? undefined : this.queue.splice(i, 1)[0];
  }

  /** While a worker is free and a chat waits for its own busy worker, dispatch again when it may be stolen. */
  private armStealTimer(now: number): void {
    if (this.stealTimer || this.closed) return;
    const free = this.slots.filter((s) => !s.task);
    const waits = this.queue
      .filter((p) => p.affinity !== undefined && free.some((s) => this.eligible(s, p)))
      .map((p) => p.queuedAt + (this.opts.stealAfterMs ?? 25) - now)
      .filter((w) => w > 0);
    if (waits.length === 0) return;
    this.stealTimer = setTimeout(() => {
      this.stealTimer = null;
      this.dispatch();
    }, Math.max(1, Math.ceil(Math.min(...waits))));
    this.stealTimer.unref();
  }

  private dispatch(): void {
    const now = performance.now();
    for (const slot of this.slots) {
      if (slot.task) continue;
      const next = this.take(slot, now);
      if (!next) continue;
      const task = Object.assign(next, { id: this.nextId++ });
      slot.task = task;
      const msg: TokenizerTask = { id: task.id, ...task.body };
      slot.worker.postMessage(msg);
    }
    this.armStealTimer(now);
  }

  private run<T extends number[] | string>(body: TaskBody, chars: number, signal?: AbortSignal, affinity?: number): Promise<T> {
    if (this.closed) return Promise.reject(closedError());
    if (this.broken) return Promise.reject(this.broken);
    if (signal?.aborted) return Promise.reject(abortedError());
    const limit = this.opts.maxQueued ?? 1024;
    if (this.queue.length >= limit && !this.slots.some((slot) => !slot.task && (slot.lane === 'any' || this.isShort(chars)))) {
      return Promise.reject(new ServingError('queue_full', `too many prompts waiting to be tokenised (${this.queue.length}, limit ${limit}); retry later`));
    }
    return new Promise((resolve, reject) => {
      const pending: Pending = { body, chars, affinity, queuedAt: performance.now(), resolve: (result) => resolve(result as T), reject, settled: false };
      signal?.addEventListener('abort', () => this.abandon(pending), { once: true });
      this.queue.push(pending);
      this.dispatch();
    });
  }

  /** The caller left: a waiting task leaves the queue, a running one is told to stop. */
  private abandon(pending: Pending): void {
    this.answer(pending, () => pending.reject(abortedError()));
    const i = this.queue.indexOf(pending);
    if (i >= 0) {
      this.queue.splice(i, 1);
      this.outcomes.cancelled++;
      return;
    }
    const slot = this.slots.find((s) => s.task === pending);
    if (slot && slot.task) slot.worker.postMessage({ id: slot.task.id, op: 'cancel' } satisfies TokenizerTask);
  }

  private isShort(chars: number): boolean {
    return chars <= (this.opts.laneMaxChars ?? 32_768);
  }

  private inline(chars: number): boolean {
    return chars <= (this.opts.inlineMaxChars ?? 2048);
  }

  encode(text: string, options: EncodeOptions & TaskControl = {}): Promise<number[]> {
    const addSpecialTokens = options.addSpecialTokens ?? true;
    if (this.inline(text.length)) return Promise.resolve().then(() => this.opts.inline.encode(text, addSpecialTokens));
    return this.run({ op: 'encode', text, addSpecialTokens, atMost: options.atMostTokens }, text.length, options.signal);
  }

  /** Text of token ids, special tokens kept; inline for up to inlineMaxChars / 4 ids (about as many characters). */
  decode(ids: number[]): Promise<string> {
    if (this.inline(ids.length * 4)) return Promise.resolve().then(() => this.opts.inline.decode(ids, false));
    return this.run({ op: 'decode', ids }, ids.length * 4);
  }

  encodeChat(messages: ChatMessage[], options: ChatEncodeOptions, control: TaskControl = {}): Promise<number[]> {
    const chars = messages.reduce((a, m) => a + (m.content?.length ?? 0), 0);
    if (this.inline(chars)) return Promise.resolve().then(() => this.opts.inline.encodeChat(messages, options));
    return this.run({ op: 'chat', messages, options, atMost: control.atMostTokens }, chars, control.signal, conversationKey(messages));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.stealTimer) clearTimeout(this.stealTimer);
    const err = closedError();
    for (const p of this.queue.splice(0)) this.answer(p, () => p.reject(err));
    for (const s of this.slots.splice(0)) if (s.task) this.answer(s.task, () => s.task!.reject(err));
    await Promise.all([...this.workers].map((w) => w.terminate()));
  }
}
