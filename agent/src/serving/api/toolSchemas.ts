/**
 * The tool fields of chat completions (and /tokenize's chat form), validated with zod as
 * OpenAI defines them: function tools, the tool calls of an assistant message, and
 * tool_choice (resolved by toolChoiceOf, which says why a choice is refused).
 */
import { z } from 'zod';
import type { FunctionTool, ToolChoice } from '../tools/toolCalls.js';
import { parametersProblem } from '../tools/toolUse.js';
import { ApiError } from './ApiError.js';

/** A function name as OpenAI allows it. */
export const functionName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'function names are 1 to 64 letters, digits, "_" or "-"');

const FUNCTION_ONLY = 'only function tools are supported (custom tools are not); send {"type": "function", "function": {"name", "description", "parameters"}}';

/** One tool: {"type": "function", "function": {name, description?, parameters?, strict?}}. */
export const functionToolSchema = z.strictObject({
  type: z.literal('function', FUNCTION_ONLY),
  function: z.strictObject({
    name: functionName,
    /** What the function does, for the model. */
    description: z.string().nullish(),
    /** A JSON Schema of type object for the arguments; absent = none. */
    parameters: z
      .record(z.string(), z.unknown(), 'must be a JSON Schema object')
      .nullish()
      .superRefine((p, ctx) => {
        const problem = p ? parametersProblem(p) : null;
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    /** OpenAI's strict schema adherence (the grammar enforces the schema for tool_choice required / named either way). */
    strict: z.boolean().nullish(),
  }),
});

/** The request's tools: unique names. */
export const toolsSchema = z
  .array(functionToolSchema)
  .max(128, 'at most 128 tools')
  .superRefine((tools, ctx) => {
    const seen = new Set<string>();
    tools.forEach((t, i) => {
      if (seen.has(t.function.name)) ctx.addIssue({ code: 'custom', path: [i, 'function', 'name'], message: `two tools are named "${t.function.name}"; tool names must be unique` });
      seen.add(t.function.name);
    });
  });

/** A call an assistant message made, sent back in the history: arguments are JSON text, as the API returned them. */
export const messageToolCallSchema = z.strictObject({
  id: z.string().min(1),
  type: z.literal('function', 'only function tool calls are supported (custom tool calls are not)'),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});

/** The tools as FunctionTool values (null fields left out). */
export function functionToolsOf(tools: readonly z.infer<typeof functionToolSchema>[] | null | undefined): FunctionTool[] {
  return (tools ?? []).map(({ function: f }) => ({
    name: f.name,
    ...(f.description != null ? { description: f.description } : {}),
    ...(f.parameters != null ? { parameters: f.parameters } : {}),
    ...(f.strict != null ? { strict: f.strict } : {}),
  }));
}

/** The tools as the chat template takes them: {type: "function", function: {name, description?, parameters?}}, as sent. */
export function templateToolsOf(tools: readonly FunctionTool[]): object[] | undefined {
  if (tools.length === 0) return undefined;
  return tools.map(({ name, description, parameters }) => ({
    type: 'function',
    function: { name, ...(description !== undefined ? { description } : {}), ...(parameters !== undefined ? { parameters } : {}) },
  }));
}

const bad = (message: string): ApiError => ApiError.badRequest(`tool_choice: ${message}`, 'tool_choice', 'invalid_value');

/**
 * tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name"}};
 * absent = "auto" with tools, "none" without (OpenAI's default).
 */
export function toolChoiceOf(value: unknown, numTools: number): ToolChoice {
  if (value === undefined || value === null) return { type: numTools > 0 ? 'auto' : 'none' };
  if (value === 'none' || value === 'auto' || value === 'required') return { type: value };
  if (typeof value === 'object' && !Array.isArray(value)) {
    const v = value as { type?: unknown; function?: unknown };
    if (v.type === 'allowed_tools') throw bad('allowed_tools is not supported; send only the allowed tools, with tool_choice "auto" or "required"');
    if (v.type === 'custom') throw bad('custom tools are not supported; name a function: {"type": "function", "function": {"name": ...}}');
    const fn = v.function as { name?: unknown } | undefined;
    const keys = Object.keys(value);
    if (v.type === 'function' && typeof fn === 'object' && fn !== null && typeof fn.name === 'string' && keys.every((k) => k === 'type' || k === 'function') && Object.keys(fn).length === 1) {
      return { type: 'function', name: fn.name };
    }
  }
  throw bad('send "none", "auto", "required" or {"type": "function", "function": {"name": "<a tool\'s name>"}}');
}
