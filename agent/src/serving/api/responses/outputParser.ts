/**
 * What the Responses route needs from a tool-call parser (the per-family parsers of
 * agent/src/serving/tools: hermes for Qwen3, ...): the generated text split into the
 * answer's text and the function calls in it, whole or as it streams. The route builds
 * output items and stream events from these alone (responseOutput.ts, ResponseEvents.ts),
 * so a parser plugs in through `OutputParsing` without the route knowing its format.
 *
 * Until a parser is connected, `textOnly` is used: all text is the answer.
 */

/** A function call found in the output. */
export interface ParsedToolCall {
  /** The call's id (the chat tool_call id, e.g. "call_..."); the Responses call_id. */
  id: string;
  name: string;
  /** The arguments, a JSON object as text. */
  arguments: string;
}

/** A whole output, parsed. */
export interface ParsedOutput {
  /** The answer's text (null: none, only calls). */
  content: string | null;
  toolCalls: ParsedToolCall[];
}

/** One streamed piece of a call: its first piece has the id and name, later ones more arguments. */
export interface ToolCallDelta {
  /** Which call of the output (0, 1, ...), in order. */
  index: number;
  id?: string;
  name?: string;
  argumentsDelta?: string;
}

/** What a piece of generated text added to the answer and to the calls. */
export interface OutputDelta {
  content?: string;
  toolCalls?: ToolCallDelta[];
}

/** A parser of one streamed output. */
export interface StreamingOutputParser {
  /** The next generated text; returns what it adds (text held back until it is known not to be a call comes later). */
  push(text: string): OutputDelta;
  /** The output ended: whatever was held back. */
  end(): OutputDelta;
}

/** How one request's output is parsed, whole or streamed. */
export interface OutputParsing {
  parse(text: string): ParsedOutput;
  streaming(): StreamingOutputParser;
}

/** No calls: every piece of text is the answer's. */
export const textOnly: OutputParsing = {
  parse: (text) => ({ content: text, toolCalls: [] }),
  streaming: () => ({ push: (text) => (text ? { content: text } : {}), end: () => ({}) }),
};
