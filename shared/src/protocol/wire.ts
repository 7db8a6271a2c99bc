/**
 * JSON message decoding for the agent socket and the web bridge: size limit, JSON syntax,
 * then the zod schema; every failure is an error string saying which and why.
 */
import type { z } from 'zod';
import { fieldIssues, formatIssues } from '../util/issues.js';

/** Outcome of decoding one message. */
export type DecodeResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** UTF-8 byte length of a string (no TextEncoder: shared has no DOM or node types). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4; // surrogate pair
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Parses JSON text of at most maxBytes and validates it; `what` names the message kind in errors. */
export function decodeJsonMessage<S extends z.ZodType>(schema: S, text: string, maxBytes: number, what: string): DecodeResult<z.output<S>> {
  const size = utf8ByteLength(text);
  if (size > maxBytes) return { ok: false, error: `${what} is ${size} bytes, over the ${maxBytes}-byte limit` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `${what} is not valid JSON (${(err as Error).message})` };
  }
  return validateMessage(schema, raw, what);
}

/** Validates an already-parsed value. */
export function validateMessage<S extends z.ZodType>(schema: S, raw: unknown, what: string): DecodeResult<z.output<S>> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, error: `malformed ${what}: ${formatIssues(fieldIssues(parsed.error))}` };
}
