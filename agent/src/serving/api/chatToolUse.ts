/**
 * The tool fields of a chat completion request resolved (tools, tool_choice,
 * parallel_tool_calls): what the template lists, how the output is read, and the grammar
 * of a forced call (toolUse.ts). A forced call and another constraint on the output
 * (response_format, structured_outputs, guided_*) cannot both apply: a 400 naming both.
 */
import type { ToolCallParserName } from '@afd/shared';
import type { FunctionTool } from '../tools/toolCalls.js';
import { planToolUse, ToolUseError, type ToolUse } from '../tools/toolUse.js';
import { ApiError } from './ApiError.js';
import type { ChatRequest } from './schemas.js';
import { functionToolsOf, templateToolsOf, toolChoiceOf } from './toolSchemas.js';

export interface ChatToolUse {
  tools: FunctionTool[];
  use: ToolUse;
  /** The tools as the chat template takes them; undefined = none. */
  templateTools: object[] | undefined;
}

/** Request fields that constrain the output besides tool_choice. */
const OUTPUT_CONSTRAINTS = ['response_format', 'structured_outputs', 'guided_json', 'guided_regex', 'guided_choice', 'guided_grammar', 'structural_tag'] as const;

/** The field of the request that constrains its output other than tool_choice, or null. */
function otherConstraint(r: ChatRequest): string | null {
  for (const field of OUTPUT_CONSTRAINTS) {
    const v = r[field];
    if (v === undefined || v === null) continue;
    if (field === 'response_format' && typeof v === 'object' && (v as { type?: unknown }).type === 'text') continue;
    return field;
  }
  return null;
}

/** @param parser the parser of tool_choice "auto" output (null: none known for this model). */
export function chatToolUse(r: ChatRequest, parser: ToolCallParserName | null): ChatToolUse {
  const tools = functionToolsOf(r.tools);
  const choice = toolChoiceOf(r.tool_choice, tools.length);
  let use: ToolUse;
  try {
    use = planToolUse(tools, choice, r.parallel_tool_calls ?? true, parser);
  } catch (err) {
    if (err instanceof ToolUseError) throw ApiError.badRequest(`${err.param}: ${err.message}`, err.param, 'invalid_value');
    throw err;
  }
  const other = use.grammar ? otherConstraint(r) : null;
  if (other) {
    throw ApiError.badRequest(
      `tool_choice ${choice.type === 'required' ? '"required"' : 'naming a function'} forces the output to be a tool call's JSON, and ${other} constrains it too; send one of tool_choice and ${other}`,
      'tool_choice',
      'invalid_value',
    );
  }
  return { tools, use, templateTools: templateToolsOf(tools) };
}
