/**
 * The stream events of one response, from what the output parser makes of each piece of
 * generated text. Every event has a sequence_number, counting from 0. In order:
 *
 *   response.created, response.in_progress                       (start)
 *   per message item:  response.output_item.added, response.content_part.added,
 *                      response.output_text.delta ..., response.output_text.done,
 *                      response.content_part.done, response.output_item.done
 *   per function call: response.output_item.added, response.function_call_arguments.delta ...,
 *                      response.function_call_arguments.done, response.output_item.done
 *   response.completed | response.incomplete                    (finish)
 *   error, response.failed                                       (fail, instead of finish)
 *
 * Items follow each other: a call closes the message before it, text after a call opens a
 * new message. Whitespace-only text while no message is open (before a call, between calls)
 * is held back, and dropped if a call follows, as the whole-output path drops it
 * (responseOutput.ts). A response with no item gets one message, with the text it had ('').
 */
import type { ApiError } from '../ApiError.js';
import type { OutputDelta, ToolCallDelta } from './outputParser.js';
import { functionCallItem, messageItem, newId, responseBody, type ItemStatus, type OutputItem, type ResponseShell, type ResponseUsage } from './responseOutput.js';

export type ResponseEvent = { type: string; sequence_number: number } & Record<string, unknown>;

type OpenItem =
  | { kind: 'message'; index: number; id: string; text: string; logprobs: object[] }
  | { kind: 'call'; index: number; id: string; callIndex: number; callId: string; name: string; args: string };

/** A call whose name has not come yet (its id and arguments so far). */
interface PendingCall {
  callIndex: number;
  callId: string | undefined;
  args: string;
}

/** OpenAI's ResponseError codes for an error status: 400 invalid_prompt, 429 rate_limit_exceeded, else server_error. */
const errorCode = (status: number): string => (status === 429 ? 'rate_limit_exceeded' : status === 400 ? 'invalid_prompt' : 'server_error');

export class ResponseEvents {
  private seq = 0;
  private readonly output: OutputItem[] = [];
  private open: OpenItem | null = null;
  private pending: PendingCall | null = null;
  private heldText = '';
  private heldLogprobs: object[] = [];
  /** Logprobs rows of tokens whose text has not come out yet. */
  private carried: object[] = [];
  private lastCallIndex = -1;
  private calls = 0;

  constructor(
    private readonly shell: ResponseShell,
    /** false: only the first function call is kept (parallel_tool_calls). */
    private readonly parallelToolCalls: boolean,
  ) {}

  private event(type: string, fields: Record<string, unknown>): ResponseEvent {
    return { type, sequence_number: this.seq++, ...fields };
  }

  start(): ResponseEvent[] {
    const body = responseBody(this.shell, { status: 'in_progress', output: [], usage: null });
    return [this.event('response.created', { response: body }), this.event('response.in_progress', { response: body })];
  }

  /**
   * A piece of output: its text and call deltas, with the logprobs rows of its tokens when
   * asked (rows of tokens that added no text yet go with the next text, or the last message).
   */
  push(d: OutputDelta, logprobs: object[] = []): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    this.carried.push(...logprobs);
    if (d.content) {
      const rows = this.carried;
      this.carried = [];
      this.text(d.content, rows, events);
    }
    for (const c of d.toolCalls ?? []) this.call(c, events);
    return events;
  }

  /** The generation ended: closes the open item and sends the final response. */
  finish(status: 'completed' | 'incomplete', usage: ResponseUsage): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    const itemStatus: ItemStatus = status;
    if (this.pending) throw new Error(`the tool-call parser never named call ${this.pending.callIndex}`);
    if (this.calls === 0) this.flushHeld(events); // no call: held whitespace is the answer's
    if (this.output.length === 0 && this.open === null) this.openMessage(events);
    if (this.open?.kind === 'message') this.open.logprobs.push(...this.carried); // e.g. EOS, which adds no text
    this.close(itemStatus, events);
    const type = status === 'completed' ? 'response.completed' : 'response.incomplete';
    events.push(this.event(type, { response: responseBody(this.shell, { status, output: this.output, usage }) }));
    return events;
  }

  /** The generation failed: an error event, then the response as failed with the output so far. */
  fail(err: ApiError): ResponseEvent[] {
    const output = this.open ? [...this.output, this.openItem(this.open, 'in_progress')] : this.output;
    return [
      this.event('error', { code: err.code, message: err.message, param: err.param }),
      this.event('response.failed', { response: responseBody(this.shell, { status: 'failed', output, usage: null, error: { code: errorCode(err.status), message: err.message } }) }),
    ];
  }

  private text(content: string, logprobs: object[], events: ResponseEvent[]): void {
    if (this.open?.kind !== 'message') {
      if (content.trim() === '') {
        this.heldText += content;
        this.heldLogprobs.push(...logprobs);
        return;
      }
      this.close('completed', events);
      this.openMessage(events);
    }
    this.flushHeld(events);
    this.delta(content, logprobs, events);
  }

  private flushHeld(events: ResponseEvent[]): void {
    if (this.heldText === '') return;
    if (this.open?.kind !== 'message') this.openMessage(events);
    const [text, logprobs] = [this.heldText, this.heldLogprobs];
    this.heldText = '';
    this.heldLogprobs = [];
    this.delta(text, logprobs, events);
  }

  private delta(text: string, logprobs: object[], events: ResponseEvent[]): void {
    const m = this.open as Extract<OpenItem, { kind: 'message' }>;
    m.text += text;
    m.logprobs.push(...logprobs);
    events.push(this.event('response.output_text.delta', { item_id: m.id, output_index: m.index, content_index: 0, delta: text, logprobs }));
  }

  private openMessage(events: ResponseEvent[]): void {
    const m: OpenItem = { kind: 'message', index: this.output.length, id: newId('msg'), text: '', logprobs: [] };
    this.open = m;
    events.push(this.event('response.output_item.added', { output_index: m.index, item: messageItem(m.id, 'in_progress', '', []) }));
    events.push(this.event('response.content_part.added', { item_id: m.id, output_index: m.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } }));
  }

  private call(c: ToolCallDelta, events: ResponseEvent[]): void {
    if (!this.parallelToolCalls && c.index > 0) return; // only the first call is kept
    const open = this.open?.kind === 'call' ? this.open : null;
    if (open && c.index === open.callIndex) {
      if (c.argumentsDelta) this.argumentsDelta(open, c.argumentsDelta, events);
      return;
    }
    if (this.pending && c.index === this.pending.callIndex) {
      this.pending.callId ??= c.id;
      this.pending.args += c.argumentsDelta ?? '';
      if (c.name) this.openPending(c.name, events);
      return;
    }
    if (c.index <= this.lastCallIndex) throw new Error(`the tool-call parser sent call ${c.index} after call ${this.lastCallIndex} began; calls must stream in order`);
    this.lastCallIndex = c.index;
    this.heldText = ''; // whitespace before a call is not an answer
    this.heldLogprobs = [];
    this.pending = { callIndex: c.index, callId: c.id, args: c.argumentsDelta ?? '' };
    if (c.name) this.openPending(c.name, events);
  }

  private openPending(name: string, events: ResponseEvent[]): void {
    const p = this.pending!;
    this.pending = null;
    this.openCall(p.callIndex, p.callId, name, p.args, events);
  }

  private openCall(callIndex: number, callId: string | undefined, name: string, args: string, events: ResponseEvent[]): void {
    this.close('completed', events);
    const call: OpenItem = { kind: 'call', index: this.output.length, id: newId('fc'), callIndex, callId: callId || newId('call'), name, args: '' };
    this.open = call;
    this.calls++;
    events.push(this.event('response.output_item.added', { output_index: call.index, item: functionCallItem(call.id, 'in_progress', call.callId, name, '') }));
    if (args) this.argumentsDelta(call, args, events);
  }

  private argumentsDelta(call: Extract<OpenItem, { kind: 'call' }>, delta: string, events: ResponseEvent[]): void {
    call.args += delta;
    events.push(this.event('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta }));
  }

  private openItem(o: OpenItem, status: ItemStatus): OutputItem {
    return o.kind === 'message' ? messageItem(o.id, status, o.text, o.logprobs) : functionCallItem(o.id, status, o.callId, o.name, o.args);
  }

  /** Closes the open item with its done events. */
  private close(status: ItemStatus, events: ResponseEvent[]): void {
    const o = this.open;
    if (!o) return;
    this.open = null;
    const item = this.openItem(o, status);
    const at = { item_id: o.id, output_index: o.index };
    if (o.kind === 'message') {
      const part = (item as ReturnType<typeof messageItem>).content[0]!;
      events.push(this.event('response.output_text.done', { ...at, content_index: 0, text: o.text, logprobs: o.logprobs }));
      events.push(this.event('response.content_part.done', { ...at, content_index: 0, part }));
    } else {
      events.push(this.event('response.function_call_arguments.done', { ...at, name: o.name, arguments: o.args }));
    }
    this.output.push(item);
    events.push(this.event('response.output_item.done', { output_index: o.index, item }));
  }
}
