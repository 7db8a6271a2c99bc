/**
 * JSON bodies parsed without stalling the event loop. A body of a few kilobytes parses in
 * microseconds and stays on the calling thread; a large one (a 13.5 MB chat body takes
 * 0.1-0.3 s to decode and parse) goes to one worker thread, started on first use, whose
 * result comes back by structured clone: every stream of the rank keeps getting tokens
 * meanwhile.
 *
 * The worker is an inline script (no entry file of its own), so the single-file bundle
 * (afd-agent.cjs) needs nothing extra; it is unref'd and never keeps a process alive.
 */
import { Worker } from 'node:worker_threads';

/** Bodies of at least this many bytes are parsed off the event loop (about 1 ms on it). */
export const OFF_LOOP_MIN_BYTES = 256 * 1024;

/** The outcome of one parse: a value, an empty body, or the parser's message. */
export type JsonOutcome = { ok: true; value: unknown } | { ok: false; empty: boolean; message: string; lost?: true };

/** The outcome, or the bytes back when the outcome cannot be sent (parsed here then). */
type Reply = { id: number; outcome: JsonOutcome } | { id: number; bytes: Uint8Array };

// The thread runs at a lower CPU priority (nice 10, per thread on Linux), as the tokenizer
// workers: parsing a large body must not take a core from the streams of the rank.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
try { const os = require('node:os'); os.setPriority(os.constants.priority.PRIORITY_BELOW_NORMAL); } catch {}
const decoder = new TextDecoder('utf-8');
parentPort.on('message', ({ id, bytes }) => {
  let outcome;
  const text = decoder.decode(bytes);
  if (text.trim() === '') outcome = { ok: false, empty: true, message: 'empty' };
  else {
    try { outcome = { ok: true, value: JSON.parse(text) }; }
    catch (err) { outcome = { ok: false, empty: false, message: err.message }; }
  }
  try {
    parentPort.postMessage({ id, outcome });
  } catch {
    // A value structured clone cannot carry (nested deeper than its stack): the bytes go back.
    parentPort.postMessage({ id, bytes }, [bytes.buffer]);
  }
});
`;

/** Parses on the calling thread. */
export function parseJsonHere(bytes: Uint8Array): JsonOutcome {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (text.trim() === '') return { ok: false, empty: true, message: 'empty' };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, empty: false, message: (err as Error).message };
  }
}

interface Pending {
  resolve(outcome: JsonOutcome): void;
  /** The bytes, kept to parse here should the worker die before answering (null: moved to it). */
  fallback: Uint8Array | null;
}

/** One lazily started parsing thread shared by the process's servers. */
class OffLoopParser {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  parse(bytes: Uint8Array): Promise<JsonOutcome> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    // A buffer that is its whole ArrayBuffer (a body read into one allocation) moves to the
    // worker as it is; a slice (of Node's shared pool, say) is copied first.
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    const sent = whole ? bytes : new Uint8Array(bytes);
    return new Promise((resolve) => {
      this.pending.set(id, { resolve, fallback: whole ? null : bytes });
      worker.postMessage({ id, bytes: sent }, [sent.buffer as ArrayBuffer]);
    });
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, stdout: false, stderr: false });
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      p.resolve('outcome' in reply ? reply.outcome : parseJsonHere(reply.bytes));
    });
    // A dead worker (out of memory on a pathological body) must not lose a request: what
    // it held is parsed here, and the next large body starts a new worker.
    const lost = (): void => {
      if (this.worker !== worker) return;
      this.worker = null;
      const left = [...this.pending.values()];
      this.pending.clear();
      for (const p of left) p.resolve(p.fallback ? parseJsonHere(p.fallback) : { ok: false, empty: false, lost: true, message: 'the JSON parser thread exited before it parsed the body' });
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    this.worker = worker;
    return worker;
  }
}

const shared = new OffLoopParser();

/**
 * Parses `bytes` as UTF-8 JSON: small bodies here, large ones on the parsing thread. A large
 * `bytes` that spans its whole ArrayBuffer is moved there (detached here).
 */
export function parseJsonBody(bytes: Uint8Array, offLoopMinBytes = OFF_LOOP_MIN_BYTES): Promise<JsonOutcome> {
  if (bytes.byteLength < offLoopMinBytes) return Promise.resolve(parseJsonHere(bytes));
  return shared.parse(bytes);
}
