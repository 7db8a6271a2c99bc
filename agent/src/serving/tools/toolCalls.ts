/**
 * The shapes of tool calling, independent of any endpoint: the functions a request offers,
 * the calls a model's output holds (parsed whole, or streamed as deltas), and the parser
 * interface every model family's format implements (hermes, deepseek_v3, llama3_json) as
 * do the forced outputs of tool_choice "required" and a named function. Chat completions
 * and the Responses API both build on these.
 */
import { randomBytes } from 'node:crypto';

/** A function the model may call (OpenAI's function tool, without the {type, function} wrapper). */
export interface FunctionTool {
  /** [a-zA-Z0-9_-]{1,64}, unique among the request's tools. */
  name: string;
  description?: string;
  /** A JSON Schema of type object; absent = no parameters. */
  parameters?: Record<string, unknown>;
  /** OpenAI's strict flag; the grammar enforces the schema for tool_choice required / named whatever it says. */
  strict?: boolean | null;
}

/** What a request lets the model do with its tools, once resolved. */
export type ToolChoice = { type: 'none' } | { type: 'auto' } | { type: 'required' } | { type: 'function'; name: string };

/** One call found in a model's output. */
export interface ParsedToolCall {
  name: string;
  /** The arguments as JSON text, as the model wrote them (OpenAI's function.arguments). */
  arguments: string;
}

/** A model's whole output split into text and calls. */
export interface ParsedToolOutput {
  /** The text outside the calls; null when calls were found and no other text was. */
  content: string | null;
  toolCalls: ParsedToolCall[];
}

/** A piece of one call, as streamed: its first piece has id and name, later ones argument text. */
export interface ToolCallDelta {
  /** The call's place among the output's calls (0, 1, ...). */
  index: number;
  id?: string;
  name?: string;
  /** More of the arguments' JSON text. */
  arguments?: string;
}

/** What one push of text (or the finish) adds: content, call pieces, or both (absent = none). */
export interface ToolStreamDelta {
  content?: string;
  toolCalls?: ToolCallDelta[];
}

/** A parser fed a generation's text as it comes; holds back what may still turn out to be markup. */
export interface ToolStreamParser {
  /** The next text of the output. */
  push(text: string): ToolStreamDelta;
  /** The output ended: what was held back (unfinished markup falls back to content). */
  finish(): ToolStreamDelta;
}

export interface ToolStreamOptions {
  /** Makes a call's id (default: newToolCallId). */
  newId?: () => string;
}

/** A model family's tool-call format (or a forced output), parsed whole or streamed. */
export interface ToolParser {
  /** The --tool-call-parser name, or "required" / "named" for the forced outputs. */
  readonly name: string;
  /** The whole output at once: the same calls and content the stream gives for it, whatever its splits. */
  parse(text: string): ParsedToolOutput;
  stream(options?: ToolStreamOptions): ToolStreamParser;
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** An OpenAI-style call id: "call_" and 24 random letters and digits. */
export function newToolCallId(): string {
  const bytes = randomBytes(24);
  let id = 'call_';
  for (const b of bytes) id += ID_ALPHABET[b % ID_ALPHABET.length];
  return id;
}

/** Folds stream deltas into the output they stand for (what parse() returns). */
export function collectDeltas(deltas: readonly ToolStreamDelta[]): ParsedToolOutput {
  let content = '';
  const calls: ParsedToolCall[] = [];
  for (const d of deltas) {
    content += d.content ?? '';
    for (const t of d.toolCalls ?? []) {
      const call = (calls[t.index] ??= { name: '', arguments: '' });
      if (t.name !== undefined) call.name = t.name;
      call.arguments += t.arguments ?? '';
    }
  }
  return { content: calls.length > 0 && content === '' ? null : content, toolCalls: calls };
}

/** A ToolParser from its stream: parse() is the stream fed the whole text, so the two always agree. */
export function toolParserOf(name: string, stream: (options?: ToolStreamOptions) => ToolStreamParser): ToolParser {
  return {
    name,
    stream,
    parse(text: string): ParsedToolOutput {
      const s = stream({ newId: () => '' });
      return collectDeltas([s.push(text), s.finish()]);
    },
  };
}

/**
 * parallel_tool_calls: false for parsed output: only the first call is kept (later calls'
 * pieces are dropped; content still flows).
 */
export function firstCallOnly(parser: ToolParser): ToolParser {
  const keepFirst = (d: ToolStreamDelta): ToolStreamDelta => {
    const calls = d.toolCalls?.filter((t) => t.index === 0);
    return { ...(d.content !== undefined ? { content: d.content } : {}), ...(calls && calls.length > 0 ? { toolCalls: calls } : {}) };
  };
  return toolParserOf(parser.name, (options) => {
    const s = parser.stream(options);
    return { push: (text) => keepFirst(s.push(text)), finish: () => keepFirst(s.finish()) };
  });
}
