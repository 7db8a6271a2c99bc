/** Small node:http helpers: JSON responses and size-capped body readers. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './ApiError.js';
import { parseJsonBody } from './jsonParser.js';

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, text: string, contentType: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Reads a whole body as bytes; 413 past `limitBytes`. With a Content-Length the chunks land
 * in one allocation of that size (no second copy of a large body).
 */
export async function readRawBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  const tooLarge = (): ApiError => new ApiError(413, 'invalid_request_error', `request body is larger than ${limitBytes} bytes; send a shorter prompt`, 'body_too_large');
  if (Number.isSafeInteger(declared) && declared > limitBytes) throw tooLarge();
  const into = Number.isSafeInteger(declared) && declared > 64 * 1024 ? Buffer.allocUnsafeSlow(declared) : null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    if (size + chunk.length > limitBytes) throw tooLarge();
    if (into && size + chunk.length <= into.length) chunk.copy(into, size);
    else chunks.push(chunk);
    size += chunk.length;
  }
  if (!into) return Buffer.concat(chunks);
  if (size === into.length) return into;
  return size < into.length ? into.subarray(0, size) : Buffer.concat([into, ...chunks]);
}

/**
 * Reads and parses a JSON body; 413 past `limitBytes`, 400 when it is empty or not JSON.
 * A large body is decoded and parsed off the event loop (jsonParser.ts).
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const outcome = await parseJsonBody(await readRawBody(req, limitBytes));
  if (outcome.ok) return outcome.value;
  if (outcome.lost) throw new ApiError(500, 'server_error', `${outcome.message}; retry the request`, 'server_error');
  if (outcome.empty) throw ApiError.badRequest('the request body is empty; send a JSON object', null, 'invalid_json');
  throw ApiError.badRequest(`the request body is not valid JSON (${outcome.message})`, null, 'invalid_json');
}

/**
 * Refuses a body that is not declared as JSON, as vLLM does (its validate_json_request): a
 * 400 whose message starts with vLLM's "Unsupported Media Type: Only 'application/json' is
 * allowed". Parameters such as `; charset=utf-8` are fine.
 */
export function requireJsonContentType(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (type.split(';', 1)[0]!.trim() === 'application/json') return;
  const got = type === '' ? 'no Content-Type' : `Content-Type "${type}"`;
  throw ApiError.badRequest(`Unsupported Media Type: Only 'application/json' is allowed (got ${got}); send the body as JSON with "Content-Type: application/json"`, null, 'unsupported_media_type');
}
