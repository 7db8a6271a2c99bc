/**
 * A bounded copy of a body that passes through the router: its first `headChars` and its
 * last `tailChars`, and how many bytes went by. Adding a chunk is cheap (a reference kept or
 * dropped, no decoding, no copy): the kept chunks become text once, in `text()`, after the
 * exchange. The head keeps a request's model and a stream's first events, the tail its
 * usage and finish reason.
 */

export class BoundedCapture {
  private readonly head: (string | Buffer)[] = [];
  private headLength = 0;
  /** Tail chunks from `tailStart` on (those before it fell out of the window). */
  private tail: (string | Buffer)[] = [];
  private tailStart = 0;
  private tailLength = 0;
  /** Bytes added, kept or not. */
  totalBytes = 0;
  /** Some chunk fell out of the tail window. */
  private dropped = false;

  constructor(
    private readonly headChars: number,
    private readonly tailChars: number,
  ) {}

  add(chunk: string | Buffer): void {
    if (chunk.length === 0) return;
    this.totalBytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    const room = this.headChars - this.headLength;
    if (room > 0) {
      const first = chunk.length <= room ? chunk : cut(chunk, 0, room);
      this.head.push(first);
      this.headLength += first.length;
      if (first.length === chunk.length) return;
      chunk = cut(chunk, room, chunk.length);
    }
    this.tail.push(chunk);
    this.tailLength += chunk.length;
    // Drop whole chunks that fall out of the tail window (by index: many tiny chunks stay O(1) each).
    while (this.tail.length - this.tailStart > 1 && this.tailLength - this.tail[this.tailStart]!.length >= this.tailChars) {
      this.tailLength -= this.tail[this.tailStart++]!.length;
      this.dropped = true;
    }
    if (this.tailStart > 1024 && this.tailStart * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailStart);
      this.tailStart = 0;
    }
  }

  /** Whether everything added is kept. */
  get complete(): boolean {
    return !this.dropped && this.tailLength <= this.tailChars;
  }

  /** The kept text: head, then (when something was left out) a note of how much, then tail. */
  text(): string {
    const head = joinText(this.head);
    const tailAll = joinText(this.tail.slice(this.tailStart));
    const tail = tailAll.length > this.tailChars ? tailAll.slice(tailAll.length - this.tailChars) : tailAll;
    // join(): one flat string (a rope of many small ones costs its first reader a flatten);
    // an ASCII note keeps an ASCII body one byte per character.
    if (this.complete) return [head, tail].join('');
    const omitted = this.totalBytes - Buffer.byteLength(head) - Buffer.byteLength(tail);
    return [head, `\n... [${omitted} bytes not kept] ...\n`, tail].join('');
  }
}

function cut(chunk: string | Buffer, start: number, end: number): string | Buffer {
  return typeof chunk === 'string' ? chunk.slice(start, end) : chunk.subarray(start, end);
}

function joinText(chunks: readonly (string | Buffer)[]): string {
  const out: string[] = [];
  let bytes: Buffer[] = [];
  for (const c of chunks) {
    if (typeof c === 'string') {
      if (bytes.length > 0) out.push(Buffer.concat(bytes).toString('utf8'));
      bytes = [];
      out.push(c);
    } else bytes.push(c);
  }
  if (bytes.length > 0) out.push(Buffer.concat(bytes).toString('utf8'));
  return out.join('');
}
