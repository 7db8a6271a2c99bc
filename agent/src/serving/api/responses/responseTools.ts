/**
 * The function tools of a Responses request and its tool_choice, resolved into what the
 * chat machinery takes: the tools in the chat shape the chat template renders
 * ({type: "function", function: {name, description, parameters}}), whether the output is
 * parsed for calls, and the chat-shaped tool_choice when calls are forced (which needs a
 * grammar: tool_choice "required", a named function, allowed_tools in "required" mode).
 *
 *   tool_choice          tools shown to the model   output parsed for calls   forced
 *   none                 none                       no                        -
 *   auto (default)       all                        yes                       -
 *   allowed_tools auto   the allowed ones           yes                       -
 *   required             all                        yes                       "required"
 *   allowed_tools req.   the allowed ones           yes                       "required"
 *   {function, name}     that one                   yes                       {function: {name}}
 */
import { ApiError } from '../ApiError.js';
import type { FunctionTool, ResponsesRequest } from './responsesSchema.js';

/** A tool as chat templates take it (OpenAI's chat completions shape). */
export interface TemplateTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** A tool_choice that forces a call, in the chat completions shape. */
export type ForcedToolChoice = 'required' | { type: 'function'; function: { name: string } };

export interface ToolPlan {
  /** Tools rendered into the prompt by the chat template (empty: none). */
  templateTools: TemplateTool[];
  /** The output is parsed for function calls (tools shown and tool_choice not "none"). */
  parseCalls: boolean;
  /** Calls forced by tool_choice, else null. */
  forced: ForcedToolChoice | null;
}

const bad = (param: string, message: string): ApiError => ApiError.badRequest(`${param}: ${message}`, param, 'invalid_value');

function toTemplateTool(t: FunctionTool): TemplateTool {
  return {
    type: 'function',
    function: { name: t.name, ...(t.description ? { description: t.description } : {}), ...(t.parameters ? { parameters: t.parameters } : {}) },
  };
}

/** Every named tool of `names` must be a function of the request. */
function checkNamed(names: readonly string[], tools: ReadonlyMap<string, FunctionTool>, param: string): void {
  for (const n of names) {
    if (!tools.has(n)) throw bad(param, `no function named "${n}" in tools (${tools.size ? [...tools.keys()].join(', ') : 'none'}); name one of the request's function tools`);
  }
}

/** The request's tools and tool_choice, checked (unique names, named tools that exist) and resolved. */
export function planTools(r: Pick<ResponsesRequest, 'tools' | 'tool_choice'>): ToolPlan {
  const byName = new Map<string, FunctionTool>();
  (r.tools ?? []).forEach((t, i) => {
    if (byName.has(t.name)) throw bad(`tools.${i}.name`, `two tools are named "${t.name}"; give each function its own name`);
    byName.set(t.name, t);
  });
  const all = [...byName.values()];
  const choice = r.tool_choice ?? 'auto';
  const shown = (tools: FunctionTool[], forced: ForcedToolChoice | null): ToolPlan => ({ templateTools: tools.map(toTemplateTool), parseCalls: tools.length > 0, forced });
  if (choice === 'none') return { templateTools: [], parseCalls: false, forced: null };
  if (choice === 'auto') return shown(all, null);
  if (choice === 'required') {
    if (all.length === 0) throw bad('tool_choice', '"required" needs at least one function in tools');
    return shown(all, 'required');
  }
  if (choice.type === 'function') {
    checkNamed([choice.name], byName, 'tool_choice.name');
    return shown([byName.get(choice.name)!], { type: 'function', function: { name: choice.name } });
  }
  const names = choice.tools.map((t) => t.name);
  checkNamed(names, byName, 'tool_choice.tools');
  const allowed = all.filter((t) => names.includes(t.name));
  return shown(allowed, choice.mode === 'required' ? 'required' : null);
}
