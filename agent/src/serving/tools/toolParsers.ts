/**
 * The tool-call parsers by --tool-call-parser name, and the choice `auto` makes: the
 * format whose markup the model's chat template writes.
 */
import type { ToolCallParserName } from '@afd/shared';
import { deepseekV3Parser, DEEPSEEK_CALLS_BEGIN } from './deepseekV3Parser.js';
import { hermesParser } from './hermesParser.js';
import { llama3JsonParser } from './llama3JsonParser.js';
import type { ToolParser } from './toolCalls.js';

export const toolParsers: Readonly<Record<ToolCallParserName, ToolParser>> = {
  hermes: hermesParser,
  deepseek_v3: deepseekV3Parser,
  llama3_json: llama3JsonParser,
};

/**
 * The parser a chat template's markup calls for: <tool_call> (Qwen3, Qwen2.5, Hermes) ->
 * hermes; <｜tool▁calls▁begin｜> (DeepSeek V3 / R1) -> deepseek_v3; <|python_tag|>, or
 * Llama 3's ipython header -> llama3_json; else null.
 */
export function detectToolParser(templateSource: string): ToolCallParserName | null {
  if (templateSource.includes('<tool_call>')) return 'hermes';
  if (templateSource.includes(DEEPSEEK_CALLS_BEGIN)) return 'deepseek_v3';
  if (templateSource.includes('<|python_tag|>') || (templateSource.includes('<|start_header_id|>') && templateSource.includes('ipython'))) return 'llama3_json';
  return null;
}

/** The parser of a --tool-call-parser setting for a model's template (null: none, with auto and no known markup). */
export function resolveToolParser(setting: ToolCallParserName | 'auto', templateSource: string | null): ToolCallParserName | null {
  if (setting !== 'auto') return setting;
  return templateSource === null ? null : detectToolParser(templateSource);
}
