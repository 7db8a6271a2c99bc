/**
 * deepseek_v3: DeepSeek-V3's (and R1's) tool calls (vLLM's `deepseek_v3` parser), special
 * tokens around a type, a name and the arguments in a fenced JSON block:
 *
 *   text before<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
 *   ```json
 *   {"city": "Paris"}
 *   ```<｜tool▁call▁end｜>
 *   <｜tool▁call▁begin｜>function<｜tool▁sep｜>...<｜tool▁call▁end｜><｜tool▁calls▁end｜>
 *
 * A call is committed once its name line ends; the arguments are the text between the
 * fence line and <｜tool▁call▁end｜>, the closing fence and whitespace cut. A block whose
 * first call does not get that far (no separator, no name) is content as written; later
 * broken calls are dropped. Text after <｜tool▁calls▁end｜> is content.
 */
import { ContentText, DeltaBuilder, partialTagLength } from './streamText.js';
import { newToolCallId, toolParserOf, type ToolParser, type ToolStreamDelta, type ToolStreamOptions, type ToolStreamParser } from './toolCalls.js';

export const DEEPSEEK_CALLS_BEGIN = '<｜tool▁calls▁begin｜>';
const CALLS_END = '<｜tool▁calls▁end｜>';
const CALL_BEGIN = '<｜tool▁call▁begin｜>';
const CALL_END = '<｜tool▁call▁end｜>';
const SEP = '<｜tool▁sep｜>';
/** Longest call type accepted before <｜tool▁sep｜> ("function" in practice). */
const MAX_TYPE_CHARS = 32;
/** What the end of the arguments may hold of the closing fence. */
const FENCE_TAIL = /[\s`]*$/;

type Mode =
  /** Content, looking for the calls block. */
  | 'text'
  /** In the block, between calls. */
  | 'calls'
  /** After <｜tool▁call▁begin｜>: the type, up to <｜tool▁sep｜>. */
  | 'type'
  /** The name, up to the end of its line. */
  | 'name'
  /** The fence line (```json). */
  | 'fence'
  /** The arguments, up to <｜tool▁call▁end｜>. */
  | 'args'
  /** A broken call after a committed one: dropped up to the next call or the block's end. */
  | 'skip';

class DeepseekV3Stream implements ToolStreamParser {
  private readonly out = new DeltaBuilder();
  private readonly content = new ContentText(this.out);
  private readonly newId: () => string;
  private mode: Mode = 'text';
  /** A possible beginning of a tag (text, calls, args, skip), or the field being read (type, name, fence). */
  private held = '';
  /** The end of the arguments so far that may be the closing fence (held until more text shows it is not). */
  private argsTail = '';
  /** The block's text while no call of it is committed (content if it falls back). */
  private pending = '';
  private committedInBlock = false;
  /** The block turned out not to be calls: its text so far is content. */
  private fallBack = false;
  private numCalls = 0;

  constructor(options: ToolStreamOptions = {}) {
    this.newId = options.newId ?? newToolCallId;
  }

  push(text: string): ToolStreamDelta {
    let i = 0;
    while (i < text.length) {
      const rest = text.slice(i);
      const tracking = this.tracking();
      const used = this.feed(rest);
      if (tracking && (this.tracking() || this.fallBack)) this.pending += rest.slice(0, used);
      if (this.fallBack) {
        this.content.text(this.pending);
        [this.pending, this.fallBack] = ['', false];
      }
      i += used;
    }
    return this.out.take();
  }

  finish(): ToolStreamDelta {
    if (this.mode === 'text') this.content.text(this.held);
    else if (this.tracking()) this.content.text(this.pending);
    this.held = '';
    this.content.finish();
    return this.out.take();
  }

  /** In a block none of whose calls is committed yet: its text is kept for a fall back. */
  private tracking(): boolean {
    return this.mode !== 'text' && !this.committedInBlock;
  }

  /** Feeds the start of `rest` to the current mode; returns how many characters it used. */
  private feed(rest: string): number {
    switch (this.mode) {
      case 'text':
        return this.untilTag(rest, [DEEPSEEK_CALLS_BEGIN], (before) => this.content.text(before), () => this.beginBlock());
      case 'calls':
        return this.betweenCalls(rest);
      case 'type':
      case 'name':
      case 'fence':
        this.field(rest[0]!);
        return 1;
      case 'args':
        return this.untilTag(rest, [CALL_END, CALLS_END], (before) => this.args(before), (tag) => this.endCall(tag));
      case 'skip':
        return this.untilTag(rest, [CALL_BEGIN, CALL_END, CALLS_END], () => undefined, (tag) => (tag === CALL_BEGIN ? void (this.mode = 'type') : this.endCall(tag)));
    }
  }

  /**
   * Text up to the first of `tags` goes to `before` (a possible partial tag at the end held
   * back); then `found` with the tag. Returns the characters of `rest` used.
   */
  private untilTag(rest: string, tags: readonly string[], before: (s: string) => void, found: (tag: string) => void): number {
    const work = this.held + rest;
    const heldLength = this.held.length;
    this.held = '';
    let at = -1;
    let tag = '';
    for (const t of tags) {
      const k = work.indexOf(t);
      if (k >= 0 && (at < 0 || k < at)) [at, tag] = [k, t];
    }
    if (at < 0) {
      const keep = partialTagLength(work, tags);
      before(work.slice(0, work.length - keep));
      this.held = work.slice(work.length - keep);
      return rest.length;
    }
    before(work.slice(0, at));
    found(tag);
    return at + tag.length - heldLength;
  }

  private beginBlock(): void {
    this.mode = 'calls';
    this.committedInBlock = false;
    this.pending = this.content.takeHeldSpace() + DEEPSEEK_CALLS_BEGIN;
  }

  private endBlock(): void {
    this.mode = 'text';
    this.held = '';
    if (!this.committedInBlock) this.fallBack = true;
  }

  /** Between calls: whitespace, the next call or the block's end; anything else breaks the block. */
  private betweenCalls(rest: string): number {
    const work = this.held + rest;
    const heldLength = this.held.length;
    const lead = work.length - work.trimStart().length;
    const body = work.slice(lead);
    this.held = '';
    if (body.startsWith(CALL_BEGIN)) {
      this.mode = 'type';
      return lead + CALL_BEGIN.length - heldLength;
    }
    if (body.startsWith(CALLS_END)) {
      this.endBlock();
      return lead + CALLS_END.length - heldLength;
    }
    if (body === '' || CALL_BEGIN.startsWith(body) || CALLS_END.startsWith(body)) {
      this.held = body;
      return rest.length;
    }
    // Stray text in the block: dropped after a committed call, else the block is content.
    if (!this.committedInBlock) this.endBlock();
    return Math.max(1, lead + 1 - heldLength);
  }

  /** One character of the type, the name or the fence line. */
  private field(c: string): void {
    this.held += c;
    const f = this.held;
    if (this.mode === 'type') {
      const tag = f.indexOf('<');
      if (f.endsWith(SEP)) [this.mode, this.held] = ['name', ''];
      else if (tag >= 0 && !SEP.startsWith(f.slice(tag))) this.broken(f.slice(tag));
      else if (f.length > MAX_TYPE_CHARS + SEP.length || c === '\n') this.broken('');
    } else if (this.mode === 'name') {
      if (c === '<') return this.broken(c);
      if (c !== '\n') return;
      const name = f.trim();
      this.held = '';
      if (name === '') this.broken('');
      else this.commit(name);
    } else {
      const t = f.trimStart();
      const fence = t.startsWith('```') || '```'.startsWith(t);
      if (fence && c !== '\n') return; // still in the fence line
      [this.mode, this.held] = ['args', ''];
      if (!fence) this.args(f); // no fence: this is the arguments already
    }
  }

  private commit(name: string): void {
    this.committedInBlock = true;
    this.pending = '';
    this.content.callFound();
    this.out.callStart(this.numCalls++, this.newId(), name);
    this.mode = 'fence';
  }

  /** Arguments text; a tail that may be the closing fence is held until more text shows it is not. */
  private args(s: string): void {
    const work = this.argsTail + s;
    const at = FENCE_TAIL.exec(work)!.index;
    this.out.callArguments(this.numCalls - 1, work.slice(0, at));
    this.argsTail = work.slice(at);
  }

  private endCall(tag: string): void {
    this.argsTail = '';
    if (tag === CALLS_END) this.endBlock();
    else this.mode = 'calls';
  }

  /**
   * A call that is not one: the block falls back to content if none of it was committed,
   * else the call is dropped up to the next tag (`tail`: a tag's beginning already read).
   */
  private broken(tail: string): void {
    this.held = '';
    if (!this.committedInBlock) return this.endBlock();
    this.mode = 'skip';
    this.held = tail;
  }
}

export const deepseekV3Parser: ToolParser = toolParserOf('deepseek_v3', (options) => new DeepseekV3Stream(options));
