/**
 * Building blocks of the streaming tool parsers: the delta a push returns, the content
 * text with its whitespace rule, and the test for a markup tag cut by a chunk boundary.
 */
import type { ToolCallDelta, ToolStreamDelta } from './toolCalls.js';

/** Length of the longest end of `text` that begins one of `tags` (without being all of it). */
export function partialTagLength(text: string, tags: readonly string[]): number {
  let best = 0;
  for (const tag of tags) {
    for (let k = Math.min(tag.length - 1, text.length); k > best; k--) {
      if (text.endsWith(tag.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

/** The content and call pieces of one push, gathered and handed out by take(). */
export class DeltaBuilder {
  private content = '';
  private calls: ToolCallDelta[] = [];

  text(s: string): void {
    this.content += s;
  }

  callStart(index: number, id: string, name: string): void {
    this.calls.push({ index, id, name, arguments: '' });
  }

  callArguments(index: number, fragment: string): void {
    if (fragment === '') return;
    const last = this.calls.at(-1);
    if (last?.index === index) last.arguments = (last.arguments ?? '') + fragment;
    else this.calls.push({ index, arguments: fragment });
  }

  take(): ToolStreamDelta {
    const d: ToolStreamDelta = {};
    if (this.content !== '') d.content = this.content;
    if (this.calls.length > 0) d.toolCalls = this.calls;
    this.content = '';
    this.calls = [];
    return d;
  }
}

const TRAILING_SPACE = /\s*$/;

/**
 * The text outside the calls. Whitespace next to a call is not content: the run before a
 * call's markup and the run after a call are dropped (so "\n\n<tool_call>..." has content
 * null); trailing whitespace is held until more text shows whether a call follows. With no
 * call at all every character comes out as it went in.
 */
export class ContentText {
  /** Trailing whitespace not yet emitted. */
  private heldSpace = '';
  /** Just after a call: leading whitespace is dropped. */
  private afterCall = false;
  /** A call was found (trailing whitespace at the finish is then dropped). */
  private sawCall = false;

  constructor(private readonly out: DeltaBuilder) {}

  text(s: string): void {
    if (this.afterCall) {
      s = s.trimStart();
      if (s === '') return;
      this.afterCall = false;
    }
    const at = TRAILING_SPACE.exec(s)!.index;
    if (at > 0) {
      this.out.text(this.heldSpace + s.slice(0, at));
      this.heldSpace = '';
    }
    this.heldSpace += s.slice(at);
  }

  /** Markup may begin here: the held whitespace goes to the caller (content again if the markup falls back). */
  takeHeldSpace(): string {
    const s = this.heldSpace;
    this.heldSpace = '';
    return s;
  }

  /** A call was committed: the content after it begins at its first non-whitespace character. */
  callFound(): void {
    this.afterCall = true;
    this.sawCall = true;
  }

  finish(): void {
    if (!this.sawCall) this.out.text(this.heldSpace);
    this.heldSpace = '';
  }
}
