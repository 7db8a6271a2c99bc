/**
 * Matches answers to requests by id, for every request/response protocol over one socket:
 * the agent protocol (agent/src/daemon/AgentClient.ts, app/src/service/AgentConnection.ts)
 * and the console bridge (app/src/renderer/bridge/wsBridge.ts). Pure TypeScript, so the
 * renderer may use it too.
 *
 *   const { id, answer } = requests.start(method, 30_000, () => new Error('no answer'));
 *   socket.send(JSON.stringify({ id, method, params }));
 *   // on a response frame:
 *   requests.settle(frame.id, (method) => (frame.ok ? parse(method, frame.result) : { ok: false, error }));
 *   // on close:
 *   requests.failAll(new Error('connection closed'));
 *
 * Every request ends exactly once: answered, timed out, failed, or failed with the rest;
 * whatever comes for it later is unknown (settle returns false).
 */

/** The timers a correlator uses (Node's and browsers' have this shape). */
export interface CorrelatorTimers {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface RequestCorrelatorOptions {
  /** Id of the next request; must not repeat while requests are pending (default "1", "2", ...). */
  newId?: () => string;
  /** Timers (default the host's, looked up on each use so test fake timers apply). */
  timers?: CorrelatorTimers;
}

/** How a request ends: with a value for its caller, or an error. */
export type RequestOutcome = { ok: true; value: unknown } | { ok: false; error: Error };

interface Pending<C> {
  context: C;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: unknown;
}

/** The host's timers, called unbound (a browser refuses setTimeout called on another object). */
function hostTimers(): CorrelatorTimers {
  const host = globalThis as unknown as CorrelatorTimers;
  return {
    setTimeout: (run, ms) => host.setTimeout(run, ms),
    clearTimeout: (handle) => host.clearTimeout(handle),
  };
}

/**
 * Pending requests of one connection. `C` is what the caller needs to read a request's
 * answer (e.g. its method, to validate the result against that method's schema).
 */
export class RequestCorrelator<C> {
  private readonly pending = new Map<string, Pending<C>>();
  private readonly timers: CorrelatorTimers;
  private readonly newId: () => string;

  constructor(opts: RequestCorrelatorOptions = {}) {
    this.timers = opts.timers ?? hostTimers();
    let next = 1;
    this.newId = opts.newId ?? (() => String(next++));
  }

  /** Requests waiting for their answer. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Registers a request (send its frame with `id` next). `answer` settles with its outcome,
   * or rejects with `timeoutError()` when nothing settles it within `timeoutMs`.
   */
  start<T>(context: C, timeoutMs: number, timeoutError: () => Error): { id: string; answer: Promise<T> } {
    const id = this.newId();
    if (this.pending.has(id)) throw new Error(`request id ${id} is already pending: newId must not repeat`);
    const answer = new Promise<T>((resolve, reject) => {
      const timer = this.timers.setTimeout(() => {
        this.pending.delete(id);
        reject(timeoutError());
      }, timeoutMs);
      this.pending.set(id, { context, resolve: resolve as (value: unknown) => void, reject, timer });
    });
    return { id, answer };
  }

  /**
   * Ends request `id` with the outcome `read` makes of its answer, given the request's
   * context. False when no such request is pending (timed out, already answered, never sent).
   */
  settle(id: string, read: (context: C) => RequestOutcome): boolean {
    const p = this.take(id);
    if (!p) return false;
    let outcome: RequestOutcome;
    try {
      outcome = read(p.context);
    } catch (err) {
      outcome = { ok: false, error: err instanceof Error ? err : new Error(String(err)) };
    }
    if (outcome.ok) p.resolve(outcome.value);
    else p.reject(outcome.error);
    return true;
  }

  /** Ends request `id` with `error` (e.g. its frame could not be sent); false when it is not pending. */
  fail(id: string, error: Error): boolean {
    const p = this.take(id);
    p?.reject(error);
    return p !== undefined;
  }

  /** Ends every pending request with `error` (the connection closed). */
  failAll(error: Error): void {
    for (const id of [...this.pending.keys()]) this.fail(id, error);
  }

  private take(id: string): Pending<C> | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    this.pending.delete(id);
    this.timers.clearTimeout(p.timer);
    return p;
  }
}
