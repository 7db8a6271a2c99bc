/**
 * The Playground's tools setting: a JSON list of OpenAI function tools the user types
 * (empty = no tools), the tool choice (auto, none, required, or one function of the list)
 * and whether the model may make several calls at once. With tools they are sent as
 * `tools`, `tool_choice` and `parallel_tool_calls`; without, none of them is.
 */
import { chatFunctionToolSchema, type ChatFunctionTool, type ChatToolChoice } from '@afd/shared';
import { z } from 'zod';
import { jsonKind, parseJsonText, type Parsed } from './jsonText.js';

/** auto, none, required, or the name of a function of the list. */
export type ToolChoiceSetting = string;

export interface ToolSettings {
  /** The tools as typed: a JSON array; empty = no tools. */
  toolsText: string;
  toolChoice: ToolChoiceSetting;
  parallelToolCalls: boolean;
}

export const defaultToolSettings: ToolSettings = { toolsText: '', toolChoice: 'auto', parallelToolCalls: true };

export const TOOL_CHOICE_MODES = ['auto', 'none', 'required'] as const;

/** What the sample tools button puts in the box. */
export const SAMPLE_TOOLS = `[
  {
    "type": "function",
    "function": {
      "name": "get_weather",
      "description": "Current weather in a city",
      "parameters": {
        "type": "object",
        "properties": { "city": { "type": "string", "description": "City name, e.g. Paris" } },
        "required": ["city"]
      }
    }
  },
  {
    "type": "function",
    "function": {
      "name": "get_time",
      "description": "Current local time in a time zone",
      "parameters": {
        "type": "object",
        "properties": { "timezone": { "type": "string", "description": "IANA time zone, e.g. Europe/Paris" } },
        "required": ["timezone"]
      }
    }
  }
]`;

const toolList = z.array(chatFunctionToolSchema).min(1, 'the list is empty: add a tool, or clear the box for none');

/** The typed tools (empty text = none), or what is wrong with them, naming the entry and field. */
export function parseToolsText(text: string): Parsed<ChatFunctionTool[]> {
  if (text.trim() === '') return { ok: true, value: [] };
  const json = parseJsonText(text);
  if (!json.ok) return json;
  if (!Array.isArray(json.value)) return { ok: false, error: `tools are a JSON array of {"type": "function", "function": {...}}, not ${jsonKind(json.value)}` };
  const r = toolList.safeParse(json.value);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const where = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
    return { ok: false, error: `tools${where}: ${issue.message}` };
  }
  const seen = new Set<string>();
  for (const t of r.data) {
    if (seen.has(t.function.name)) return { ok: false, error: `two tools are named ${t.function.name}: each function needs its own name` };
    seen.add(t.function.name);
  }
  return { ok: true, value: r.data };
}

/** The tool fields to send (none without tools), or what is wrong with the settings. */
export function toolFields(s: ToolSettings): Parsed<{ tools?: ChatFunctionTool[]; tool_choice?: ChatToolChoice; parallel_tool_calls?: boolean }> {
  const tools = parseToolsText(s.toolsText);
  if (!tools.ok) return tools;
  if (tools.value.length === 0) return { ok: true, value: {} };
  let choice: ChatToolChoice;
  if ((TOOL_CHOICE_MODES as readonly string[]).includes(s.toolChoice)) choice = s.toolChoice as (typeof TOOL_CHOICE_MODES)[number];
  else if (tools.value.some((t) => t.function.name === s.toolChoice)) choice = { type: 'function', function: { name: s.toolChoice } };
  else return { ok: false, error: `the tool choice names ${s.toolChoice}, which is not in the tools list: pick another` };
  return { ok: true, value: { tools: tools.value, tool_choice: choice, parallel_tool_calls: s.parallelToolCalls } };
}
