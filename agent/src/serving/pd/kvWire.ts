/**
 * Framing of the prefill/decode KV transfer protocol over one byte stream (TCP).
 *
 * A frame is: a 4-byte big-endian header length, that many bytes of UTF-8 JSON (the header,
 * an object), then `header.payloadBytes` raw bytes (absent or 0 when the frame carries none).
 * The framing knows nothing of message types: `FrameDecoder` yields `{ header, payload }`
 * with the header still unknown JSON, and kvMessages.ts validates it.
 */

/** The largest header a frame may carry, in bytes (a prefill's token ids dominate it). */
export const maxHeaderBytes = 1024 * 1024;
/** The largest payload one frame may carry, in bytes. Senders split far below this (kvMessages.ts). */
export const maxFramePayloadBytes = 256 * 1024 * 1024;

/** A stream that breaks the framing or its limits. The connection cannot continue after it. */
export class WireFrameError extends Error {
  override readonly name = 'WireFrameError';
}

/** One decoded frame. `payload` may be a view into a socket buffer: copy it to keep it. */
export interface WireFrame {
  header: Record<string, unknown>;
  payload: Uint8Array;
}

const emptyPayload = new Uint8Array(0);

/**
 * Encodes one frame as the buffers to write in order (the payload is not copied).
 * The header's `payloadBytes` must equal the payload's length (or be absent when there is none).
 */
export function encodeFrame(header: object, payload: Uint8Array = emptyPayload): Buffer[] {
  const declared = (header as { payloadBytes?: unknown }).payloadBytes ?? 0;
  if (declared !== payload.byteLength) {
    throw new WireFrameError(`frame header declares payloadBytes ${String(declared)} but the payload has ${payload.byteLength} bytes`);
  }
  if (payload.byteLength > maxFramePayloadBytes) {
    throw new WireFrameError(`frame payload of ${payload.byteLength} bytes exceeds the ${maxFramePayloadBytes}-byte limit (maxFramePayloadBytes)`);
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  if (json.byteLength > maxHeaderBytes) {
    throw new WireFrameError(`frame header of ${json.byteLength} bytes exceeds the ${maxHeaderBytes}-byte limit (maxHeaderBytes)`);
  }
  const head = Buffer.allocUnsafe(4 + json.byteLength);
  head.writeUInt32BE(json.byteLength, 0);
  json.copy(head, 4);
  if (payload.byteLength === 0) return [head];
  return [head, Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)];
}

/**
 * Turns socket chunks back into frames: handles frames split across chunks at any byte and
 * many frames in one chunk. After it throws (a broken limit, a header that is not a JSON
 * object), the stream is out of step and every later `push` throws too.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** The header of the frame whose payload is awaited, with its size; null while reading a header. */
  private pending: { header: Record<string, unknown>; payloadBytes: number; headerBytes: number } | null = null;
  private broken: WireFrameError | null = null;

  /** Bytes received and not yet part of a yielded frame. */
  get bufferedBytes(): number {
    return this.buffered + (this.pending?.headerBytes ?? 0);
  }

  /** Feeds one chunk; returns the frames it completes, in order. */
  push(chunk: Uint8Array): WireFrame[] {
    if (this.broken) throw this.broken;
    if (chunk.byteLength > 0) {
      this.chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      this.buffered += chunk.byteLength;
    }
    const frames: WireFrame[] = [];
    try {
      for (;;) {
        const frame = this.next();
        if (!frame) break;
        frames.push(frame);
      }
    } catch (err) {
      this.broken = err instanceof WireFrameError ? err : new WireFrameError(String(err));
      this.chunks = [];
      this.buffered = 0;
      this.pending = null;
      throw this.broken;
    }
    return frames;
  }

  private next(): WireFrame | null {
    if (!this.pending) {
      if (this.buffered < 4) return null;
      const headerBytes = this.peekUInt32BE();
      if (headerBytes > maxHeaderBytes) {
        throw new WireFrameError(`frame header of ${headerBytes} bytes exceeds the ${maxHeaderBytes}-byte limit (maxHeaderBytes)`);
      }
      if (this.buffered < 4 + headerBytes) return null;
      this.take(4);
      this.pending = { ...parseHeader(this.take(headerBytes)), headerBytes: 4 + headerBytes };
    }
    if (this.buffered < this.pending.payloadBytes) return null;
    const { header, payloadBytes } = this.pending;
    this.pending = null;
    return { header, payload: payloadBytes === 0 ? emptyPayload : this.take(payloadBytes) };
  }

  private peekUInt32BE(): number {
    const first = this.chunks[0]!;
    if (first.byteLength >= 4) return first.readUInt32BE(0);
    const bytes = Buffer.concat(this.chunks, 4);
    return bytes.readUInt32BE(0);
  }

  /** Removes and returns the first `n` buffered bytes (no copy when one chunk holds them). */
  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.chunks[0]!;
    if (first.byteLength >= n) {
      if (first.byteLength === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.chunks[0]!;
      const used = Math.min(chunk.byteLength, n - filled);
      chunk.copy(out, filled, 0, used);
      filled += used;
      if (used === chunk.byteLength) this.chunks.shift();
      else this.chunks[0] = chunk.subarray(used);
    }
    return out;
  }
}

function parseHeader(bytes: Buffer): { header: Record<string, unknown>; payloadBytes: number } {
  let header: unknown;
  try {
    header = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new WireFrameError(`frame header is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    throw new WireFrameError('frame header is not a JSON object');
  }
  const record = header as Record<string, unknown>;
  const payloadBytes = record.payloadBytes ?? 0;
  if (typeof payloadBytes !== 'number' || !Number.isSafeInteger(payloadBytes) || payloadBytes < 0) {
    throw new WireFrameError(`frame header's payloadBytes must be a non-negative integer, got ${JSON.stringify(payloadBytes)}`);
  }
  if (payloadBytes > maxFramePayloadBytes) {
    throw new WireFrameError(`frame payload of ${payloadBytes} bytes exceeds the ${maxFramePayloadBytes}-byte limit (maxFramePayloadBytes)`);
  }
  return { header: record, payloadBytes };
}
