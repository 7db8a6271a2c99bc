/** The structured-output and tool fields a chat request carries, from the Playground's settings. */
import type { ChatStart } from '@afd/shared';
import type { Parsed } from './jsonText.js';
import { responseFormatField, type ResponseFormatSettings } from './responseFormat.js';
import { toolFields, type ToolSettings } from './toolSettings.js';

export type ChatRequestFields = Pick<Extract<ChatStart, { mode: 'chat' }>, 'response_format' | 'tools' | 'tool_choice' | 'parallel_tool_calls'>;

/** The fields to send (only those set), or what is wrong, naming the setting. */
export function chatRequestFields(format: ResponseFormatSettings, tools: ToolSettings): Parsed<ChatRequestFields> {
  const f = responseFormatField(format);
  if (!f.ok) return { ok: false, error: `response format: ${f.error}` };
  const t = toolFields(tools);
  if (!t.ok) return { ok: false, error: `tools: ${t.error}` };
  return { ok: true, value: { ...(f.value ? { response_format: f.value } : {}), ...t.value } };
}
