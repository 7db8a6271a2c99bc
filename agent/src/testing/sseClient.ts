/**
 * Test helper: one OpenAI request read the way a strict client reads it. For a stream it
 * records every SSE data payload with its arrival time, whether the stream ended with
 * `data: [DONE]`, and whether the connection broke instead (the failure the serving
 * tests exist to rule out).
 */
import { SseReader } from '../util/SseReader.js';

export interface StreamOutcome {
  status: number;
  /** Parsed data payloads, [DONE] excluded. */
  events: { atMs: number; data: Record<string, unknown> }[];
  /** The stream ended with data: [DONE]. */
  done: boolean;
  /** The connection broke (or the body was cut) before the stream ended; null when it did not. */
  broken: string | null;
  /** Error payloads among the events. */
  errors: { message: string; code?: string }[];
  /** Events that carry text or a finish reason (tokens). */
  tokens: number;
  /** finish_reason of the last choice chunk, if any. */
  finish: string | null;
  /** The whole body when not a stream. */
  body: string;
  /** The Retry-After header, if any. */
  retryAfter: string | null;
}

/** Options of postStream: cancel it, or watch its events as they come. */
export interface StreamOptions {
  signal?: AbortSignal;
  onEvent?: (data: Record<string, unknown>) => void;
}

export async function postStream(url: string, body: unknown, headers: Record<string, string> = {}, o: StreamOptions = {}): Promise<StreamOutcome> {
  const signal = o.signal;
  const out: StreamOutcome = { status: 0, events: [], done: false, broken: null, errors: [], tokens: 0, finish: null, body: '', retryAfter: null };
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body), signal: signal ?? null });
  } catch (err) {
    out.broken = `request failed: ${(err as Error).message}`;
    return out;
  }
  out.status = res.status;
  out.retryAfter = res.headers.get('retry-after');
  if (!/event-stream/.test(res.headers.get('content-type') ?? '')) {
    try {
      out.body = await res.text();
    } catch (err) {
      out.broken = `body cut: ${(err as Error).message}`;
    }
    return out;
  }
  const reader = new SseReader(res.body as unknown as AsyncIterable<Uint8Array>);
  try {
    for await (const line of reader.events()) {
      if (!line.startsWith('data: ')) continue;
      const payload = line.slice(6);
      if (payload === '[DONE]') {
        out.done = true;
        continue;
      }
      const data = JSON.parse(payload) as Record<string, unknown>;
      out.events.push({ atMs: performance.now(), data });
      o.onEvent?.(data);
      const err = data['error'] as { message: string; code?: string } | undefined;
      if (err) out.errors.push(err);
      const choice = (data['choices'] as { text?: string; finish_reason?: string | null }[] | undefined)?.[0];
      if (choice) {
        out.tokens++;
        if (choice.finish_reason) out.finish = choice.finish_reason;
      }
    }
    if (reader.rest.trim() !== '') out.broken = `stream ended inside an event: ${JSON.stringify(reader.rest.slice(0, 80))}`;
  } catch (err) {
    out.broken = `stream broke: ${(err as Error).message}`;
  }
  return out;
}

/** Largest gap between consecutive events of a stream within [fromMs, toMs] (performance.now() times). */
export function longestGapMs(o: StreamOutcome, fromMs: number, toMs: number): number {
  let worst = 0;
  for (let i = 1; i < o.events.length; i++) {
    const a = o.events[i - 1]!.atMs;
    const b = o.events[i]!.atMs;
    if (b < fromMs || a > toMs) continue;
    worst = Math.max(worst, b - a);
  }
  return worst;
}
