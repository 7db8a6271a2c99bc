/**
 * Server-sent events for OpenAI streaming. Chat and completions send `data: <json>\n\n`
 * lines ending with `data: [DONE]`; the Responses API names each event (`event: <type>`
 * before its data) and ends with its final event (response.completed, ...), no [DONE].
 */
import type { ServerResponse } from 'node:http';

export function startSse(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
}

export function sendSse(res: ServerResponse, data: unknown): void {
  if (!res.writableEnded && !res.destroyed) res.write(`data: ${JSON.stringify(data)}\n\n`);
}

/** A named event: `event: <type>` then its data (the Responses API's framing). */
export function sendSseEvent(res: ServerResponse, event: { type: string }): void {
  if (!res.writableEnded && !res.destroyed) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

export function endSse(res: ServerResponse): void {
  if (!res.writableEnded && !res.destroyed) res.end('data: [DONE]\n\n');
}

/** Ends a stream of named events (nothing after its final event). */
export function endSseEvents(res: ServerResponse): void {
  if (!res.writableEnded && !res.destroyed) res.end();
}
