/**
 * A bounded ring of log lines: keeps at most `maxLines` lines and `maxBytes` bytes
 * (whichever bound is hit first drops the oldest lines), so a chatty role process can
 * never grow the agent's memory. Every line gets a sequence number, so a reader can ask
 * for "what came after line N" without missing or repeating lines.
 */
export interface RingLine {
  /** Monotonic sequence number within this ring, starting at 1. */
  seq: number;
  /** Wall-clock time the line arrived, ms since the epoch. */
  timeMs: number;
  /** Which stream of the process the line came from (the agent's own notes go to stderr). */
  stream: 'stdout' | 'stderr';
  /** The line without its trailing newline (truncated to maxLineBytes). */
  text: string;
}

export interface LogRingOptions {
  maxLines?: number;
  maxBytes?: number;
  /** Longer lines are cut and marked with an ellipsis. */
  maxLineBytes?: number;
}

export class LogRing {
  private readonly lines: RingLine[] = [];
  private head = 0; // index of the oldest line in `lines` once the ring has wrapped
  private bytes = 0;
  private nextSeq = 1;
  readonly maxLines: number;
  readonly maxBytes: number;
  readonly maxLineBytes: number;

  constructor(options: LogRingOptions = {}) {
    this.maxLines = options.maxLines ?? 2000;
    this.maxBytes = options.maxBytes ?? 1 << 20;
    this.maxLineBytes = options.maxLineBytes ?? 8 << 10;
    if (this.maxLines < 1 || this.maxBytes < 1 || this.maxLineBytes < 1) {
      throw new Error('LogRing bounds must be positive (maxLines, maxBytes, maxLineBytes)');
    }
  }

  /** Appends one line and returns it (with its sequence number). */
  push(stream: RingLine['stream'], text: string, timeMs = Date.now()): RingLine {
    const cut = text.length > this.maxLineBytes ? `${text.slice(0, this.maxLineBytes)}…` : text;
    const line: RingLine = { seq: this.nextSeq++, timeMs, stream, text: cut };
    this.lines.push(line);
    this.bytes += cut.length;
    while (this.lines.length - this.head > this.maxLines || (this.bytes > this.maxBytes && this.lines.length - this.head > 1)) {
      const dropped = this.lines[this.head++];
      if (dropped) this.bytes -= dropped.text.length;
    }
    // Compact once the dropped prefix is as large as the live part (amortised O(1)).
    if (this.head > 0 && this.head >= this.lines.length - this.head) {
      this.lines.splice(0, this.head);
      this.head = 0;
    }
    return line;
  }

  /** Number of lines held now. */
  get size(): number {
    return this.lines.length - this.head;
  }

  /** Lines with seq > afterSeq, oldest first, at most `limit` of the newest ones. */
  since(afterSeq = 0, limit = Number.POSITIVE_INFINITY): RingLine[] {
    const live = this.lines.slice(this.head).filter((l) => l.seq > afterSeq);
    return live.length > limit ? live.slice(live.length - limit) : live;
  }

  /** The newest `n` lines as plain text (for failure reports). */
  tail(n: number): string[] {
    return this.since(0, n).map((l) => l.text);
  }
}
