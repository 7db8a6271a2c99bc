/**
 * The tool use of a Responses request on the chat machinery (tools/toolUse.ts): the model's
 * parser for tool_choice auto, the forced outputs' parsers and grammar for required and a
 * named function, seen through `OutputParsing` (outputParser.ts), the shape the route's
 * output items and events are built from. A call gets its call_id ("call_...") when parsed.
 */
import type { ToolCallParserName } from '@afd/shared';
import type { GrammarSpec } from '../../grammar/grammarSpec.js';
import { newToolCallId, type ToolParser, type ToolStreamDelta } from '../../tools/toolCalls.js';
import { planToolUse, ToolUseError } from '../../tools/toolUse.js';
import type { ToolChoice } from '../../tools/toolCalls.js';
import { ApiError } from '../ApiError.js';
import { textOnly, type OutputDelta, type OutputParsing } from './outputParser.js';
import type { ToolPlan } from './responseTools.js';

export interface ResponseToolUse {
  parsing: OutputParsing;
  /** The grammar of a forced call; null = none. */
  grammar: GrammarSpec | null;
  /** The parser reads markup that the model's tokenizer marks special. */
  keepSpecialTokens: boolean;
}

function outputDelta(d: ToolStreamDelta): OutputDelta {
  const out: OutputDelta = {};
  if (d.content) out.content = d.content;
  if (d.toolCalls?.length) out.toolCalls = d.toolCalls.map((t) => ({ index: t.index, ...(t.id !== undefined ? { id: t.id, name: t.name ?? '' } : {}), ...(t.arguments ? { argumentsDelta: t.arguments } : {}) }));
  return out;
}

/** A tool parser seen as the route's OutputParsing. */
export function parsingOf(parser: ToolParser): OutputParsing {
  return {
    parse(text) {
      const out = parser.parse(text);
      return { content: out.content, toolCalls: out.toolCalls.map((c) => ({ id: newToolCallId(), name: c.name, arguments: c.arguments })) };
    },
    streaming() {
      const s = parser.stream();
      return { push: (text) => outputDelta(s.push(text)), end: () => outputDelta(s.finish()) };
    },
  };
}

/** The request's tool use; `parserName` is the server's tool-call parser (null: none known for this model). */
export function responseToolUse(plan: ToolPlan, parallelToolCalls: boolean, parserName: ToolCallParserName | null): ResponseToolUse {
  if (!plan.parseCalls) return { parsing: textOnly, grammar: null, keepSpecialTokens: false };
  const forced = plan.forced;
  const choice: ToolChoice = forced === null ? { type: 'auto' } : forced === 'required' ? { type: 'required' } : { type: 'function', name: forced.function.name };
  const tools = plan.templateTools.map((t) => t.function);
  try {
    const use = planToolUse(tools, choice, parallelToolCalls, parserName);
    return { parsing: use.parser ? parsingOf(use.parser) : textOnly, grammar: use.grammar, keepSpecialTokens: use.keepSpecialTokens };
  } catch (err) {
    if (err instanceof ToolUseError) throw ApiError.badRequest(`${err.param}: ${err.message}`, err.param, 'invalid_value');
    throw err;
  }
}
