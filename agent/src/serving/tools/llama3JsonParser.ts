/**
 * llama3_json: Llama 3.1 / 3.2 / 3.3's JSON tool calls (vLLM's `llama3_json` parser). An
 * output that is calls begins (after whitespace) with a JSON object, optionally after the
 * <|python_tag|> token, and may hold several separated by ";":
 *
 *   <|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": ...}
 *
 * "arguments" is accepted in place of "parameters". Any other output is content as is. A
 * call is committed once its name is read; an object that turns out not to be a call is
 * content as written, and so is everything after it; text after the last call (other
 * than ";" and whitespace) is content.
 */
import { StreamedCall } from './StreamedCall.js';
import { ContentText, DeltaBuilder } from './streamText.js';
import { newToolCallId, toolParserOf, type ToolParser, type ToolStreamDelta, type ToolStreamOptions, type ToolStreamParser } from './toolCalls.js';

const PYTHON_TAG = '<|python_tag|>';
const ARG_KEYS = ['parameters', 'arguments'];

class Llama3JsonStream implements ToolStreamParser {
  private readonly out = new DeltaBuilder();
  private readonly content = new ContentText(this.out);
  private readonly newId: () => string;
  /**
   * start: before the output shows whether it is calls; call: in a call's JSON; between:
   * after a call (";" or whitespace, or content); text: content to the end.
   */
  private mode: 'start' | 'call' | 'between' | 'text' = 'start';
  /** The output's beginning while it does not show whether it is calls. */
  private pending = '';
  private call: StreamedCall | null = null;
  private numCalls = 0;

  constructor(options: ToolStreamOptions = {}) {
    this.newId = options.newId ?? newToolCallId;
  }

  push(text: string): ToolStreamDelta {
    let i = 0;
    while (i < text.length) {
      if (this.mode === 'text') {
        this.content.text(text.slice(i));
        break;
      }
      i = this.mode === 'start' ? this.feedStart(text, i) : this.mode === 'call' ? this.feedCall(text[i]!, i) : this.feedBetween(text[i]!, i);
    }
    return this.out.take();
  }

  finish(): ToolStreamDelta {
    if (this.mode === 'start') this.content.text(this.pending);
    else if (this.mode === 'call' && !this.call!.committed) this.content.text(this.call!.pending);
    this.content.finish();
    return this.out.take();
  }

  /** The output's beginning, until it shows a call (a "{", after <|python_tag|> or not) or content. */
  private feedStart(text: string, i: number): number {
    const c = text[i]!;
    this.pending += c;
    const lead = this.pending.trimStart();
    const tagged = lead.startsWith(PYTHON_TAG);
    const body = tagged ? lead.slice(PYTHON_TAG.length).trimStart() : lead;
    if (body === '{') {
      this.beginCall(this.pending.slice(0, -1));
      return i; // the "{" is the call's first character
    }
    if (lead === '' || (tagged && body === '') || (!tagged && PYTHON_TAG.startsWith(lead))) return i + 1;
    this.mode = 'text';
    this.content.text(this.pending);
    this.pending = '';
    return i + 1;
  }

  private beginCall(pending: string): void {
    this.mode = 'call';
    this.pending = '';
    this.call = new StreamedCall(ARG_KEYS, pending, this.out, (name) => {
      this.content.callFound();
      this.out.callStart(this.numCalls, this.newId(), name);
      return this.numCalls++;
    });
  }

  private feedCall(c: string, i: number): number {
    const call = this.call!;
    const state = call.push(c);
    if (state === 'error') {
      // Not a call (content as written), or a broken one: the rest is content.
      this.mode = 'text';
      if (!call.committed) this.content.text(call.pending);
      return call.committed ? i : i + 1;
    }
    if (state === 'done') this.mode = 'between';
    return i + 1;
  }

  /** After a call: whitespace, ";" before the next call, or content. */
  private feedBetween(c: string, i: number): number {
    if (c.trim() === '') return i + 1;
    if (c === ';') {
      this.beginCall(c);
      return i + 1;
    }
    this.mode = 'text';
    return i;
  }
}

export const llama3JsonParser: ToolParser = toolParserOf('llama3_json', (options) => new Llama3JsonStream(options));
