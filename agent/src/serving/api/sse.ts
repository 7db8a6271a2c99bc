/** Server-sent events for OpenAI streaming: `data: <json>\n\n` lines, ending with `data: [DONE]`. */
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

export function endSse(res: ServerResponse): void {
  if (!res.writableEnded && !res.destroyed) res.end('data: [DONE]\n\n');
}
