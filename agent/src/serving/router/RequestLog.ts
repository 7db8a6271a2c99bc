/**
 * The front router's request log: the newest `capacity` exchanges (REQUEST_LOG_CAPACITY),
 * each a summary (RequestSummary: endpoint, model, tokens, TTFT, duration, status, finish
 * reason) and its bounded bodies. The bodies of all records together stay under
 * `bodyBudgetChars`: past it, the oldest records lose theirs (their summaries stay). One
 * log outlives launches (the agent's LaunchManager owns it), so ids stay unique.
 */
import { REQUEST_LOG_CAPACITY, type RequestDetail, type RequestSummary } from '@afd/shared';
import { streamText } from './exchangeFacts.js';

/** An ended exchange, as RequestTrace.finish() hands it over. */
export interface LoggedExchange {
  summary: Omit<RequestSummary, 'id'>;
  requestBody: string;
  requestBytes: number;
  responseBody: string;
  responseBytes: number;
}

interface Entry {
  summary: RequestSummary;
  /** Null once dropped for the budget. */
  bodies: { request: string; response: string } | null;
  requestBytes: number;
  responseBytes: number;
}

export interface RequestLogOptions {
  /** Records kept (default REQUEST_LOG_CAPACITY). */
  capacity?: number;
  /** Characters of bodies kept over all records (default 32 Mi). */
  bodyBudgetChars?: number;
}

export type RequestListener = (summary: RequestSummary) => void;

export class RequestLog {
  /** Oldest first; ids consecutive. */
  private readonly entries: Entry[] = [];
  private nextId = 0;
  private bodyChars = 0;
  /** Index of the oldest entry that still has its bodies. */
  private oldestWithBodies = 0;
  private readonly listeners = new Set<RequestListener>();
  private readonly capacity: number;
  private readonly bodyBudgetChars: number;

  constructor(opts: RequestLogOptions = {}) {
    this.capacity = opts.capacity ?? REQUEST_LOG_CAPACITY;
    this.bodyBudgetChars = opts.bodyBudgetChars ?? 32 * 2 ** 20;
  }

  /** Records an ended exchange and tells the listeners; returns its summary. */
  add(x: LoggedExchange): RequestSummary {
    const summary: RequestSummary = { id: this.nextId++, ...x.summary };
    this.entries.push({ summary, bodies: { request: x.requestBody, response: x.responseBody }, requestBytes: x.requestBytes, responseBytes: x.responseBytes });
    this.bodyChars += x.requestBody.length + x.responseBody.length;
    if (this.entries.length > this.capacity) {
      const gone = this.entries.shift()!;
      if (gone.bodies) this.bodyChars -= gone.bodies.request.length + gone.bodies.response.length;
      this.oldestWithBodies = Math.max(0, this.oldestWithBodies - 1);
    }
    // Over budget: the oldest records give up their bodies (never the newest one).
    while (this.bodyChars > this.bodyBudgetChars && this.oldestWithBodies < this.entries.length - 1) {
      const e = this.entries[this.oldestWithBodies++]!;
      if (e.bodies) this.bodyChars -= e.bodies.request.length + e.bodies.response.length;
      e.bodies = null;
    }
    for (const l of this.listeners) l(summary);
    return summary;
  }

  /** Every record kept, oldest first. */
  summaries(): RequestSummary[] {
    return this.entries.map((e) => e.summary);
  }

  get size(): number {
    return this.entries.length;
  }

  /** Characters of bodies kept now. */
  get bodyCharsKept(): number {
    return this.bodyChars;
  }

  /** A record with its bodies; undefined when `id` was never logged or has left the log. */
  get(id: number): RequestDetail | undefined {
    const first = this.entries[0]?.summary.id ?? 0;
    const e = this.entries[id - first];
    if (!e || e.summary.id !== id) return undefined;
    const dropped = '(not kept: the log keeps the bodies of its newest requests only)';
    return {
      ...e.summary,
      requestBody: e.bodies?.request ?? dropped,
      requestBytes: e.requestBytes,
      responseBody: e.bodies?.response ?? dropped,
      responseBytes: e.responseBytes,
      responseText: e.summary.stream && e.bodies ? streamText(e.bodies.response) : null,
      bodiesKept: e.bodies !== null,
    };
  }

  /** Calls `listener` with each new record; returns the unsubscribe function. */
  onRecord(listener: RequestListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
