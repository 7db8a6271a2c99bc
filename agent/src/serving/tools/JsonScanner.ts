/**
 * An incremental JSON scanner: fed one character at a time, it checks the text is (the
 * beginning of) one JSON value and says where values begin and end, with their depth and
 * object key. The tool parsers use it to find a call's name and to stream the raw text of
 * its arguments as it is generated, without waiting for the whole value.
 *
 * Depth: the top-level value is 0, its members or items 1, and so on.
 */

/** What one character did. */
export type JsonScanEvent =
  /** The character begins a value. */
  | { kind: 'start'; depth: number; key: string | null }
  /** A value ended: with this character (inclusive) or just before it (a number, ended by what follows). */
  | { kind: 'end'; depth: number; key: string | null; inclusive: boolean }
  /** Not JSON; the scanner stays failed. */
  | { kind: 'error'; message: string };

type Expect = 'value' | 'valueOrEnd' | 'key' | 'keyOrEnd' | 'colon' | 'commaOrEnd';

interface Frame {
  type: 'object' | 'array';
  expect: Expect;
  /** The key of the member being read (objects). */
  key: string | null;
  /** This container's own key in its parent (for its end event). */
  ownKey: string | null;
}

type Scalar =
  | { type: 'string'; isKey: boolean; escape: boolean; hexLeft: number; raw: string }
  | { type: 'number'; raw: string }
  | { type: 'literal'; word: string; matched: number };

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const NUMBER_CHAR = /[0-9eE.+-]/;
const HEX = /[0-9a-fA-F]/;
const SPACE = new Set([' ', '\t', '\n', '\r']);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't', 'u']);

export class JsonScanner {
  private readonly frames: Frame[] = [];
  private scalar: Scalar | null = null;
  private top: 'value' | 'done' = 'value';
  private failure: string | null = null;
  private events: JsonScanEvent[] = [];

  /** The top-level value is complete. */
  get done(): boolean {
    return this.top === 'done';
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  /** Scans one character (a UTF-16 unit); the events it caused, in order. */
  push(c: string): JsonScanEvent[] {
    this.events = [];
    if (this.failure !== null) return [{ kind: 'error', message: this.failure }];
    if (this.scalar && !this.scalarChar(c)) return this.events;
    if (this.failure === null && !this.scalar) this.structural(c);
    return this.events;
  }

  /** The input ended: a top-level number still open ends here. */
  end(): JsonScanEvent[] {
    this.events = [];
    if (this.scalar?.type === 'number' && this.frames.length === 0) this.endNumber();
    return this.events;
  }

  private fail(message: string): void {
    this.failure = message;
    this.events.push({ kind: 'error', message });
  }

  /** Feeds c to the open scalar; true when c is left for the structural scan (it ended a number). */
  private scalarChar(c: string): boolean {
    const s = this.scalar!;
    if (s.type === 'string') {
      if (s.isKey) s.raw += c;
      if (s.hexLeft > 0) {
        if (!HEX.test(c)) this.fail(`bad \\u escape character ${JSON.stringify(c)}`);
        s.hexLeft--;
      } else if (s.escape) {
        if (!ESCAPES.has(c)) this.fail(`bad escape \\${c}`);
        s.escape = false;
        if (c === 'u') s.hexLeft = 4;
      } else if (c === '\\') s.escape = true;
      else if (c === '"') {
        this.scalar = null;
        if (s.isKey) {
          const f = this.frames.at(-1)!;
          f.key = JSON.parse(s.raw) as string;
          f.expect = 'colon';
        } else this.valueEnded(true);
      } else if (c < ' ') this.fail('a control character inside a string');
      return false;
    }
    if (s.type === 'number') {
      if (NUMBER_CHAR.test(c)) {
        s.raw += c;
        return false;
      }
      return this.endNumber();
    }
    if (c !== s.word[s.matched]) {
      this.fail(`expected ${s.word}`);
      return false;
    }
    if (++s.matched === s.word.length) {
      this.scalar = null;
      this.valueEnded(true);
    }
    return false;
  }

  private endNumber(): boolean {
    const raw = (this.scalar as { raw: string }).raw;
    this.scalar = null;
    if (!NUMBER.test(raw)) {
      this.fail(`bad number ${raw}`);
      return false;
    }
    this.valueEnded(false);
    return true;
  }

  private structural(c: string): void {
    if (SPACE.has(c)) return;
    const f = this.frames.at(-1);
    const expect: Expect | 'done' = f ? f.expect : this.top === 'value' ? 'value' : 'done';
    switch (expect) {
      case 'done':
        return this.fail('text after the JSON value');
      case 'valueOrEnd':
        if (c === ']') return this.close();
        return this.beginValue(c);
      case 'value':
        return this.beginValue(c);
      case 'keyOrEnd':
      case 'key':
        if (c === '"') {
          this.scalar = { type: 'string', isKey: true, escape: false, hexLeft: 0, raw: '"' };
          return;
        }
        if (c === '}' && expect === 'keyOrEnd') return this.close();
        return this.fail('expected a key');
      case 'colon':
        if (c !== ':') return this.fail('expected ":"');
        f!.expect = 'value';
        return;
      case 'commaOrEnd':
        if (c === ',') {
          f!.expect = f!.type === 'object' ? 'key' : 'value';
          return;
        }
        if (c === (f!.type === 'object' ? '}' : ']')) return this.close();
        return this.fail(`expected "," or "${f!.type === 'object' ? '}' : ']'}"`);
    }
  }

  private beginValue(c: string): void {
    const parent = this.frames.at(-1);
    const key = parent?.type === 'object' ? parent.key : null;
    const start = (): void => void this.events.push({ kind: 'start', depth: this.frames.length, key });
    if (c === '{' || c === '[') {
      start();
      this.frames.push({ type: c === '{' ? 'object' : 'array', expect: c === '{' ? 'keyOrEnd' : 'valueOrEnd', key: null, ownKey: key });
    } else if (c === '"') {
      start();
      this.scalar = { type: 'string', isKey: false, escape: false, hexLeft: 0, raw: '' };
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      start();
      this.scalar = { type: 'number', raw: c };
    } else if (c === 't' || c === 'f' || c === 'n') {
      start();
      this.scalar = { type: 'literal', word: c === 't' ? 'true' : c === 'f' ? 'false' : 'null', matched: 1 };
    } else this.fail(`unexpected ${JSON.stringify(c)}`);
  }

  private close(): void {
    const f = this.frames.pop()!;
    this.events.push({ kind: 'end', depth: this.frames.length, key: f.ownKey, inclusive: true });
    this.afterValue();
  }

  /** A scalar ended (a container's end goes through close). */
  private valueEnded(inclusive: boolean): void {
    const parent = this.frames.at(-1);
    this.events.push({ kind: 'end', depth: this.frames.length, key: parent?.type === 'object' ? parent.key : null, inclusive });
    this.afterValue();
  }

  private afterValue(): void {
    const parent = this.frames.at(-1);
    if (parent) parent.expect = 'commaOrEnd';
    else this.top = 'done';
  }
}
