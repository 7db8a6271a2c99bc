/**
 * Writes frames to one socket with backpressure. `send` writes a frame at once (frames go out
 * in call order) and resolves when the socket has handed it to the kernel (the write callback)
 * and, when the write filled the socket's buffer, after 'drain'. `sendChunk` splits a large
 * payload into frames of at most `maxChunkFrameBytes` and awaits each before writing the next,
 * so one job buffers at most one frame and other jobs' frames interleave with it.
 */
import type { Socket } from 'node:net';
import { encodeFrame } from './kvWire.js';
import { maxChunkFrameBytes } from './kvMessages.js';

export class FrameWriter {
  private drainWaiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  private closedError: Error | null = null;
  private sentBytes = 0;
  /** Rejects when the socket closes, in case a write callback never comes. */
  private readonly closed: Promise<never>;

  constructor(private readonly socket: Socket) {
    let rejectClosed!: (err: Error) => void;
    this.closed = new Promise<never>((_resolve, reject) => (rejectClosed = reject));
    this.closed.catch(() => undefined);
    socket.on('drain', () => this.settleDrain(null));
    socket.on('close', () => {
      this.closedError ??= new Error('connection closed');
      this.settleDrain(this.closedError);
      rejectClosed(this.closedError);
    });
  }

  /** Bytes written so far (headers and payloads). */
  get bytesSent(): number {
    return this.sentBytes;
  }

  /** Writes one frame now; resolves when it is handed to the kernel, rejects when the connection is gone. */
  send(header: object, payload?: Uint8Array): Promise<void> {
    if (this.closedError || this.socket.destroyed || !this.socket.writable) {
      return Promise.reject(this.closedError ?? new Error('connection closed'));
    }
    let parts: Buffer[];
    try {
      parts = encodeFrame(header, payload);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    let written!: Promise<void>;
    let full = false;
    this.socket.cork();
    for (const [i, part] of parts.entries()) {
      this.sentBytes += part.byteLength;
      if (i < parts.length - 1) {
        full = !this.socket.write(part) || full;
      } else {
        written = new Promise<void>((resolve, reject) => {
          full = !this.socket.write(part, (err) => (err ? reject(err) : resolve())) || full;
        });
      }
    }
    this.socket.uncork();
    written = Promise.race([written, this.closed]);
    if (!full) return written;
    const drained = new Promise<void>((resolve, reject) => this.drainWaiters.push({ resolve, reject }));
    return Promise.all([written, drained]).then(() => undefined);
  }

  /** Writes one frame without waiting; a closed connection is noticed by its owner, not here. */
  post(header: object): void {
    this.send(header).catch(() => undefined);
  }

  /**
   * Sends a chunk as `first(firstPayloadBytes)` carrying its first bytes, then `part` frames
   * (`{ type: 'part', id, payloadBytes }`) with the rest; each frame at most maxChunkFrameBytes.
   * Stops between frames, rejecting, once `stopped()` says so (the job was cancelled).
   */
  async sendChunk(id: string, data: Uint8Array, first: (payloadBytes: number) => object, stopped: () => boolean = () => false): Promise<void> {
    let offset = Math.min(data.byteLength, maxChunkFrameBytes);
    await this.send(first(offset), data.subarray(0, offset));
    while (offset < data.byteLength) {
      if (stopped()) throw new Error(`chunk of job ${id} stopped after ${offset} of ${data.byteLength} bytes: the job was cancelled`);
      const end = Math.min(data.byteLength, offset + maxChunkFrameBytes);
      await this.send({ type: 'part', id, payloadBytes: end - offset }, data.subarray(offset, end));
      offset = end;
    }
  }

  private settleDrain(err: Error | null): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) {
      if (err) w.reject(err);
      else w.resolve();
    }
  }
}
