/**
 * hermes: the format of Qwen3, Qwen2.5 and Hermes models (vLLM's `hermes` parser). Each
 * call is a JSON object between tags, several may follow each other:
 *
 *   text before<tool_call>
 *   {"name": "get_weather", "arguments": {"city": "Paris"}}
 *   </tool_call>
 *   <tool_call>
 *   ...
 *
 * The content is the text outside the calls (whitespace next to a call dropped). A call is
 * committed, and streamed, once its name is read; until then its text is held back, and
 * if it is not a call after all (not JSON, no name) it is content as written. After a
 * committed call, anything up to </tool_call> is dropped; a missing </tool_call> (the model
 * stopped, or began the next <tool_call>) ends the call too.
 */
import { StreamedCall } from './StreamedCall.js';
import { ContentText, DeltaBuilder, partialTagLength } from './streamText.js';
import { newToolCallId, toolParserOf, type ToolParser, type ToolStreamDelta, type ToolStreamOptions, type ToolStreamParser } from './toolCalls.js';

const START = '<tool_call>';
const END = '</tool_call>';

class HermesStream implements ToolStreamParser {
  private readonly out = new DeltaBuilder();
  private readonly content = new ContentText(this.out);
  private readonly newId: () => string;
  /** text: reading content; call: reading a call's JSON; close: after it, until </tool_call>. */
  private mode: 'text' | 'call' | 'close' = 'text';
  /** A possible beginning of a tag, cut by the chunk's end. */
  private held = '';
  private call: StreamedCall | null = null;
  /** Calls committed so far. */
  private numCalls = 0;

  constructor(options: ToolStreamOptions = {}) {
    this.newId = options.newId ?? newToolCallId;
  }

  push(text: string): ToolStreamDelta {
    let i = 0;
    while (i < text.length) i = this.mode === 'text' ? this.feedText(text, i) : this.mode === 'call' ? this.feedCall(text, i) : this.feedClose(text, i);
    return this.out.take();
  }

  finish(): ToolStreamDelta {
    if (this.mode === 'text') this.content.text(this.held);
    else if (this.mode === 'call' && !this.call!.committed) this.content.text(this.call!.pending);
    this.held = '';
    this.content.finish();
    return this.out.take();
  }

  /** Content up to the next <tool_call>; returns where in `text` it stopped. */
  private feedText(text: string, i: number): number {
    const work = this.held + text.slice(i);
    const heldLength = this.held.length;
    this.held = '';
    const at = work.indexOf(START);
    if (at < 0) {
      const keep = partialTagLength(work, [START]);
      this.content.text(work.slice(0, work.length - keep));
      this.held = work.slice(work.length - keep);
      return text.length;
    }
    this.content.text(work.slice(0, at));
    this.beginCall(this.content.takeHeldSpace() + START);
    return i + at + START.length - heldLength;
  }

  private beginCall(pending: string): void {
    this.mode = 'call';
    this.call = new StreamedCall(['arguments'], pending, this.out, (name) => {
      this.content.callFound();
      this.out.callStart(this.numCalls, this.newId(), name);
      return this.numCalls++;
    });
  }

  /** One character of a call's JSON. */
  private feedCall(text: string, i: number): number {
    const call = this.call!;
    const state = call.push(text[i]!);
    if (state === 'error') {
      if (!call.committed) {
        // Not a call: its text is content, as written.
        this.mode = 'text';
        this.content.text(call.pending);
        return i + 1;
      }
      this.mode = 'close';
      return i; // the character may begin </tool_call>
    }
    if (state === 'done') this.mode = 'close';
    return i + 1;
  }

  /** After a call's JSON: everything up to </tool_call> (or the next <tool_call>) is dropped. */
  private feedClose(text: string, i: number): number {
    const work = this.held + text.slice(i);
    const heldLength = this.held.length;
    this.held = '';
    const end = work.indexOf(END);
    const next = work.indexOf(START);
    if (end < 0 && next < 0) {
      this.held = work.slice(work.length - partialTagLength(work, [END, START]));
      return text.length;
    }
    if (end >= 0 && (next < 0 || end < next)) {
      this.mode = 'text';
      return i + end + END.length - heldLength;
    }
    this.beginCall(START);
    return i + next + START.length - heldLength;
  }
}

export const hermesParser: ToolParser = toolParserOf('hermes', (options) => new HermesStream(options));
