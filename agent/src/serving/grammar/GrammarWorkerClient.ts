/**
 * One grammar worker thread seen from the main thread: started on first use, tasks posted
 * in call order (queued while it starts), replies matched by id. When the worker exits
 * (xgrammar aborted, or it crashed) every task in flight fails with why, the generation
 * number goes up (so state kept in the old worker, e.g. matchers, is known to be lost),
 * and the next task starts a new worker.
 *
 * Like the tokenizer pool, it runs node:worker_threads on the agent's own bundle
 * (`script`), whose entry hands grammar workers to runGrammarWorker (cli/main.ts).
 */
import { Worker } from 'node:worker_threads';
import type { GrammarReply, GrammarTask, GrammarWorkerData } from './grammarProtocol.js';

/** A task in flight, without its id; resolved with its reply (error replies included). */
type Task = GrammarTask extends infer T ? (T extends { id: number } ? Omit<T, 'id'> : never) : never;
type Message = Extract<GrammarTask, { op: 'open' | 'free' }>;
type Answer = Exclude<GrammarReply, { type: 'ready' | 'failed' }>;

/** The worker stopped or could not start; `message` says why. */
export class GrammarWorkerLost extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GrammarWorkerLost';
  }
}

interface Running {
  worker: Worker;
  ready: boolean;
  /** Posted while it starts, sent once ready. */
  outbox: { msg: GrammarTask; transfer: ArrayBuffer[] }[];
  /** Its tasks in flight. */
  pending: Map<number, { resolve(a: Answer): void; reject(e: Error): void }>;
  /** Why it is going away (its fatal error), once it is. */
  endReason: string | null;
}

export class GrammarWorkerClient {
  private running: Running | null = null;
  private nextId = 0;
  private closed = false;
  /** Set when a worker could not start (e.g. no tokenizer.json): every task fails with it, none restarts. */
  private broken: string | null = null;
  /** Bumped each time a worker starts; state of an older generation is gone. */
  generation = 0;
  /** The last worker's load time and vocabulary type (from its ready message). */
  loaded: { loadMs: number; vocabType: string | null } | null = null;

  constructor(
    private readonly script: string,
    private readonly data: GrammarWorkerData,
  ) {}

  /** The current worker generation, starting a worker when none runs. */
  ensure(): number {
    this.start();
    return this.generation;
  }

  /** Sends a task and waits for its reply. Rejects with GrammarWorkerLost when the worker goes away first. */
  request(task: Task, transfer: ArrayBuffer[] = []): Promise<Answer> {
    if (this.closed) return Promise.reject(new GrammarWorkerLost('the grammar service is closed (the rank is stopping)'));
    if (this.broken) return Promise.reject(new GrammarWorkerLost(this.broken));
    const id = this.nextId++;
    return new Promise<Answer>((resolve, reject) => {
      this.start().pending.set(id, { resolve, reject });
      this.post({ ...task, id } as GrammarTask, transfer);
    });
  }

  /** Sends a task that has no reply to the running worker (none runs: dropped; call ensure() first to start one). */
  send(msg: Message): void {
    if (!this.closed && this.running) this.post(msg, []);
  }

  private post(msg: GrammarTask, transfer: ArrayBuffer[]): void {
    const r = this.start();
    if (r.ready) r.worker.postMessage(msg, transfer);
    else r.outbox.push({ msg, transfer });
  }

  private start(): Running {
    if (this.running) return this.running;
    const worker = new Worker(this.script, { workerData: this.data, stdout: false, stderr: false });
    worker.unref();
    const r: Running = { worker, ready: false, outbox: [], pending: new Map(), endReason: null };
    this.running = r;
    this.generation++;
    worker.on('message', (reply: GrammarReply) => {
      if (reply.type === 'ready') {
        r.ready = true;
        this.loaded = { loadMs: reply.loadMs, vocabType: reply.vocabType };
        for (const { msg, transfer } of r.outbox.splice(0)) worker.postMessage(msg, transfer);
      } else if (reply.type === 'failed') {
        this.broken = `the grammar worker could not start: ${reply.message}`;
        this.retire(r, this.broken);
        void worker.terminate();
      } else {
        const p = r.pending.get(reply.id);
        r.pending.delete(reply.id);
        if (reply.type === 'error' && reply.fatal) this.retire(r, reply.message);
        p?.resolve(reply);
      }
    });
    worker.on('error', (err) => this.retire(r, `the grammar worker failed: ${err.message}`));
    worker.on('exit', (code) => {
      this.retire(r, `exit code ${code}`);
      this.lost(r);
    });
    return r;
  }

  /** A worker that is going away (xgrammar aborted, it crashed): new tasks go to a new one. */
  private retire(r: Running, why: string): void {
    r.endReason ??= why;
    if (this.running === r) this.running = null;
  }

  /** The worker ended: fail its tasks in flight (queued behind the one that ended it). */
  private lost(r: Running): void {
    const why = this.closed ? 'the grammar service is closed (the rank is stopping)' : `the grammar worker stopped (${r.endReason})`;
    const err = new GrammarWorkerLost(why);
    for (const p of r.pending.values()) p.reject(err);
    r.pending.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.running?.worker.terminate();
  }
}
