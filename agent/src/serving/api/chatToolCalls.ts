/**
 * Tool calls in chat completion responses, as OpenAI shapes them: message.tool_calls
 * [{id, type: "function", function: {name, arguments}}] with content null when there is
 * no other text, and in a stream delta.tool_calls [{index, id, type, function: {name,
 * arguments}}] on a call's first piece, [{index, function: {arguments}}] after. The
 * finish_reason of a generation that stopped by itself after calls is the tool use's
 * (tool_calls for auto and required, stop for a named function); a cut one stays length.
 */
import { newToolCallId, type ParsedToolCall, type ToolCallDelta, type ToolParser, type ToolStreamDelta, type ToolStreamParser } from '../tools/toolCalls.js';
import type { OpenAiFinish } from './responseFormat.js';

/** How a response reads its output for tool calls. */
export interface ChatToolOutput {
  parser: ToolParser;
  callsFinish: 'tool_calls' | 'stop';
}

/** An OpenAI tool_calls entry of a message. */
function messageCall(c: ParsedToolCall): object {
  return { id: newToolCallId(), type: 'function', function: { name: c.name, arguments: c.arguments } };
}

/** A delta.tool_calls entry. */
function deltaCall(t: ToolCallDelta): object {
  if (t.id === undefined) return { index: t.index, function: { arguments: t.arguments ?? '' } };
  return { index: t.index, id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments ?? '' } };
}

/** The finish reason of a choice: the tool use's when it stopped by itself after calls. */
function finishOf(out: ChatToolOutput, finish: OpenAiFinish, sawCalls: boolean): OpenAiFinish {
  return finish === 'stop' && sawCalls ? out.callsFinish : finish;
}

/** The message and finish reason of a whole output (non-streamed). */
export function toolMessage(out: ChatToolOutput, echo: string, text: string, finish: OpenAiFinish): { message: object; finish: OpenAiFinish } {
  const parsed = out.parser.parse(text);
  const content = parsed.content === null ? (echo === '' ? null : echo) : echo + parsed.content;
  return {
    message: { role: 'assistant', content, refusal: null, tool_calls: parsed.toolCalls.map(messageCall) },
    finish: finishOf(out, finish, parsed.toolCalls.length > 0),
  };
}

/** A stream delta's body ({content?, tool_calls?}), or null when it carries nothing. */
function deltaBody(d: ToolStreamDelta, echo: string): object | null {
  const content = echo + (d.content ?? '');
  if (content === '' && !d.toolCalls) return null;
  return { ...(content !== '' ? { content } : {}), ...(d.toolCalls ? { tool_calls: d.toolCalls.map(deltaCall) } : {}) };
}

/** The stream parsers of a response's choices (each choice its own calls). */
export class ChatToolStreams {
  private readonly streams = new Map<number, { parser: ToolStreamParser; sawCalls: boolean }>();

  constructor(private readonly out: ChatToolOutput) {}

  private of(index: number): { parser: ToolStreamParser; sawCalls: boolean } {
    let s = this.streams.get(index);
    if (!s) this.streams.set(index, (s = { parser: this.out.parser.stream(), sawCalls: false }));
    return s;
  }

  /** Choice `index`'s next text: the delta body to send, or null (held back). */
  push(index: number, text: string, echo: string): object | null {
    const s = this.of(index);
    const d = s.parser.push(text);
    if (d.toolCalls) s.sawCalls = true;
    return deltaBody(d, echo);
  }

  /** Choice `index` ended: what was held back (or null), and its finish reason. */
  finish(index: number, echo: string, finish: OpenAiFinish): { delta: object | null; finish: OpenAiFinish } {
    const s = this.of(index);
    const d = s.parser.finish();
    if (d.toolCalls) s.sawCalls = true;
    this.streams.delete(index);
    return { delta: deltaBody(d, echo), finish: finishOf(this.out, finish, s.sawCalls) };
  }
}
