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
 */
import { Worker } from 'node:worker_threads';
import { ServingError } from '../ServingError.js';
import type { ChatMessage } from './ChatTemplate.js';
import type { ChatEncodeOptions, EncodeOptions, PromptEncoder } from './PromptEncoder.js';
import type { TextTokenizer } from './TextTokenizer.js';
import type { TokenizerReply, TokenizerTask, TokenizerWorkerData } from './tokenizerWorker.js';

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
  /** Tasks waiting for a worker beyond this are refused with queue_full (429); default 1024. */
  maxQueued?: number;
}

/** A task without its id (assigned when it is posted). */
type TaskBody = { op: 'encode'; text: string; addSpecialTokens: boolean } | { op: 'chat'; messages: ChatMessage[]; options: ChatEncodeOptions } | { op: 'decode'; ids: number[] };

interface Pending {
  body: TaskBody;
  /** Token ids (encode, chat) or text (decode). */
  resolve(result: number[] | string): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  task: (Pending & { id: number }) | null;
}

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
  /** Set when a worker could not load the tokenizer: every task fails with it. */
  private broken: ServingError | null = null;

  private constructor(private readonly opts: TokenizerPoolOptions) {}

  /** Starts the workers and waits until each has loaded the tokenizer. */
  static async start(opts: TokenizerPoolOptions): Promise<TokenizerPool> {
    if (!Number.isInteger(opts.workers) || opts.workers < 1) throw new Error(`tokenizer workers must be an integer >= 1, got ${opts.workers}`);
    const pool = new TokenizerPool(opts);
    try {
      await Promise.all(Array.from({ length: opts.workers }, () => pool.spawn()));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  get size(): number {
    return this.slots.length;
  }

  /** Tasks waiting for a worker. */
  get queued(): number {
    return this.queue.length;
  }

  private spawn(): Promise<void> {
    const data: TokenizerWorkerData = { afdWorker: 'tokenizer', modelDir: this.opts.modelDir };
    const worker = new Worker(this.opts.script, { workerData: data, stdout: false, stderr: false });
    worker.unref();
    this.workers.add(worker);
    worker.once('exit', () => this.workers.delete(worker));
    const slot: Slot = { worker, task: null };
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
    slot.task?.reject(new ServingError('engine_error', `${why} while tokenising this prompt`));
    slot.task = null;
    if (this.closed) return;
    this.spawn().catch((err: Error) => {
      for (const p of this.queue.splice(0)) p.reject(err);
    });
  }

  private settle(slot: Slot, reply: Extract<TokenizerReply, { id: number }>): void {
    const task = slot.task;
    if (!task || task.id !== reply.id) return;
    slot.task = null;
    if (reply.type === 'done') task.resolve(Array.from(reply.ids));
    else if (reply.type === 'text') task.resolve(reply.text);
    else task.reject(new Error(reply.message));
    this.dispatch();
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.task) continue;
      const next = this.queue.shift();
      if (!next) return;
      const task = { ...next, id: this.nextId++ };
      slot.task = task;
      const msg: TokenizerTask = { id: task.id, ...task.body };
      slot.worker.postMessage(msg);
    }
  }

  private run<T extends number[] | string>(body: TaskBody): Promise<T> {
    if (this.closed) return Promise.reject(closedError());
    if (this.broken) return Promise.reject(this.broken);
    const limit = this.opts.maxQueued ?? 1024;
    if (this.queue.length >= limit && !this.slots.some((slot) => !slot.task)) {
      return Promise.reject(new ServingError('queue_full', `too many prompts waiting to be tokenised (${this.queue.length}, limit ${limit}); retry later`));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ body, resolve: (result) => resolve(result as T), reject });
      this.dispatch();
    });
  }

  private inline(chars: number): boolean {
    return chars <= (this.opts.inlineMaxChars ?? 2048);
  }

  encode(text: string, options: EncodeOptions = {}): Promise<number[]> {
    const addSpecialTokens = options.addSpecialTokens ?? true;
    if (this.inline(text.length)) return Promise.resolve().then(() => this.opts.inline.encode(text, addSpecialTokens));
    return this.run({ op: 'encode', text, addSpecialTokens });
  }

  /** Text of token ids, special tokens kept; inline for up to inlineMaxChars / 4 ids (about as many characters). */
  decode(ids: number[]): Promise<string> {
    if (this.inline(ids.length * 4)) return Promise.resolve().then(() => this.opts.inline.decode(ids, false));
    return this.run({ op: 'decode', ids });
  }

  encodeChat(messages: ChatMessage[], options: ChatEncodeOptions): Promise<number[]> {
    const chars = messages.reduce((a, m) => a + (m.content?.length ?? 0), 0);
    if (this.inline(chars)) return Promise.resolve().then(() => this.opts.inline.encodeChat(messages, options));
    return this.run({ op: 'chat', messages, options });
  }

  async close(): Promise<void> {
    this.closed = true;
    const err = closedError();
    for (const p of this.queue.splice(0)) p.reject(err);
    for (const s of this.slots.splice(0)) s.task?.reject(err);
    await Promise.all([...this.workers].map((w) => w.terminate()));
  }
}
