/**
 * What a request's tools and tool choice mean for one generation, the same for chat
 * completions and the Responses API:
 *
 *   none      the tools go to the chat template (as vLLM does by default), the output is
 *             plain text;
 *   auto      the output is read with the model's tool-call parser (hermes, deepseek_v3,
 *             llama3_json); special tokens stay in the text so the parser sees the markup;
 *             finish_reason "tool_calls" when calls were read;
 *   required  a grammar forces a JSON array of calls; finish_reason "tool_calls";
 *   named     a grammar forces that function's arguments; finish_reason "stop" (OpenAI's and
 *             vLLM's for a forced function).
 *
 * parallel_tool_calls false: at most one call (the grammar's maxItems for required, the
 * first call kept for auto, and for required too should an output hold more).
 */
import type { ToolCallParserName } from '@afd/shared';
import type { GrammarSpec } from '../grammar/grammarSpec.js';
import { namedCallParser, requiredCallsParser } from './forcedToolParsers.js';
import { firstCallOnly, type FunctionTool, type ToolChoice, type ToolParser } from './toolCalls.js';
import { toolChoiceGrammar, ToolDefsConflict } from './toolChoiceGrammar.js';
import { toolParsers } from './toolParsers.js';

export interface ToolUse {
  choice: ToolChoice;
  /** How the output is read; null = plain text. */
  parser: ToolParser | null;
  /** What constrains the output (required, named); null = nothing. */
  grammar: GrammarSpec | null;
  /** finish_reason of a generation that stopped by itself after calls were read. */
  callsFinish: 'tool_calls' | 'stop';
  /** Special tokens stay in the text (the parser needs the markup some models make special). */
  keepSpecialTokens: boolean;
}

/** A tool choice this server cannot honour; `param` is the field at fault. */
export class ToolUseError extends Error {
  constructor(
    message: string,
    readonly param: 'tools' | 'tool_choice',
  ) {
    super(message);
    this.name = 'ToolUseError';
  }
}

const PARSER_HINT = 'start the server with --tool-call-parser hermes (Qwen3, Qwen2.5), deepseek_v3 or llama3_json, or send tool_choice "required" or a named function (a grammar forces those)';

/**
 * The tool use of a request: its tools (unique names, checked), its choice (a named one
 * among the tools), parallel_tool_calls, and the parser the server reads auto output with
 * (--tool-call-parser, or the one the chat template's markup calls for; null = none).
 */
export function planToolUse(tools: readonly FunctionTool[], choice: ToolChoice, parallelToolCalls: boolean, parserName: ToolCallParserName | null): ToolUse {
  const plain: ToolUse = { choice, parser: null, grammar: null, callsFinish: 'stop', keepSpecialTokens: false };
  if (choice.type === 'none') return plain;
  if (tools.length === 0) throw new ToolUseError(`tool_choice ${choiceText(choice)} needs tools; send the tools, or leave tool_choice out`, 'tool_choice');
  if (choice.type === 'function' && !tools.some((t) => t.name === choice.name)) {
    throw new ToolUseError(`tool_choice names the function "${choice.name}", which is not among the tools (${tools.map((t) => t.name).join(', ')})`, 'tool_choice');
  }
  if (choice.type === 'auto') {
    if (parserName === null) throw new ToolUseError(`tool_choice "auto" needs a tool-call parser, and this model's chat template has no tool-call markup the server knows; ${PARSER_HINT}`, 'tool_choice');
    const parser = toolParsers[parserName];
    return { ...plain, parser: parallelToolCalls ? parser : firstCallOnly(parser), callsFinish: 'tool_calls', keepSpecialTokens: true };
  }
  let grammar: GrammarSpec | null;
  try {
    grammar = toolChoiceGrammar(tools, choice, parallelToolCalls);
  } catch (err) {
    if (err instanceof ToolDefsConflict) throw new ToolUseError(err.message, 'tools');
    throw err;
  }
  if (choice.type === 'required') return { ...plain, parser: parallelToolCalls ? requiredCallsParser : firstCallOnly(requiredCallsParser), grammar, callsFinish: 'tool_calls' };
  return { ...plain, parser: namedCallParser(choice.name), grammar };
}

function choiceText(choice: ToolChoice): string {
  return choice.type === 'function' ? `{"type": "function", "function": {"name": "${choice.name}"}}` : `"${choice.type}"`;
}

/**
 * Why a function's parameters are not an object schema (null when they are): a JSON
 * Schema object of type "object" (or no type), its properties schemas, its required a list
 * of names. The grammar checks the rest of a schema it is given.
 */
export function parametersProblem(parameters: Record<string, unknown>): string | null {
  const { type, properties, required } = parameters;
  if (type !== undefined && type !== 'object') return `must be a JSON Schema of type "object" (the arguments are an object), got type ${JSON.stringify(type)}`;
  if (properties !== undefined) {
    if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) return 'properties must be an object of property schemas';
    for (const [name, schema] of Object.entries(properties)) {
      if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) return `properties.${name} must be a schema (an object or a boolean)`;
    }
  }
  if (required !== undefined && !(Array.isArray(required) && required.every((r) => typeof r === 'string'))) return 'required must be a list of property names';
  return null;
}
