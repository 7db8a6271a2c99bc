/**
 * The grammar that forces a tool call, as vLLM builds it for tool_choice "required" and a
 * named function:
 *
 *   named     the function's parameters schema: the output is its arguments object;
 *   required  a JSON array (at least one item; at most one without parallel tool calls)
 *             whose items are {"name": <one tool's name>, "parameters": <its schema>},
 *             one anyOf branch per tool. The tools' $defs move to the array's root (a
 *             "#/$defs/..." reference means the root), and two tools may not define the
 *             same name differently.
 *
 * "auto" and "none" force nothing (null).
 */
import type { GrammarSpec } from '../grammar/grammarSpec.js';
import type { FunctionTool, ToolChoice } from './toolCalls.js';

/** A tool without parameters takes an empty object. */
const NO_PARAMETERS = { type: 'object', properties: {} };

/** Two tools' $defs disagree; the message names them. */
export class ToolDefsConflict extends Error {}

const parametersOf = (tool: FunctionTool): Record<string, unknown> => tool.parameters ?? NO_PARAMETERS;

/** The tools' $defs merged (a name two tools define differently throws ToolDefsConflict). */
function mergedDefs(tools: readonly FunctionTool[]): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  const owner: Record<string, string> = {};
  for (const tool of tools) {
    const own = parametersOf(tool)['$defs'];
    if (typeof own !== 'object' || own === null) continue;
    for (const [name, def] of Object.entries(own)) {
      if (name in defs && JSON.stringify(defs[name]) !== JSON.stringify(def)) {
        throw new ToolDefsConflict(`tools "${owner[name]}" and "${tool.name}" both define $defs.${name}, differently; rename one of them`);
      }
      defs[name] = def;
      owner[name] ??= tool.name;
    }
  }
  return defs;
}

/** The schema of one item of the "required" array. */
function itemSchema(tool: FunctionTool): Record<string, unknown> {
  const { $defs: _moved, ...parameters } = parametersOf(tool);
  return {
    type: 'object',
    properties: { name: { type: 'string', enum: [tool.name] }, parameters },
    required: ['name', 'parameters'],
  };
}

/** The grammar forcing the call(s) a tool choice asks for, or null when it forces none. */
export function toolChoiceGrammar(tools: readonly FunctionTool[], choice: ToolChoice, parallelToolCalls: boolean): GrammarSpec | null {
  if (choice.type === 'function') {
    const tool = tools.find((t) => t.name === choice.name);
    if (!tool) throw new Error(`tool_choice names "${choice.name}", which is not among the tools`);
    return { type: 'json_schema', schema: parametersOf(tool), param: 'tool_choice' };
  }
  if (choice.type !== 'required') return null;
  const schema: Record<string, unknown> = {
    type: 'array',
    minItems: 1,
    ...(parallelToolCalls ? {} : { maxItems: 1 }),
    items: { anyOf: tools.map(itemSchema) },
  };
  const defs = mergedDefs(tools);
  if (Object.keys(defs).length > 0) schema['$defs'] = defs;
  return { type: 'json_schema', schema, param: 'tool_choice' };
}
