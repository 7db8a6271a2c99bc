/**
 * text.format of a Responses request as the grammar that constrains the output (the same
 * GrammarSpec chat's response_format becomes), its `param` naming the request field:
 *
 *   {"type": "text"}                            -> none
 *   {"type": "json_object"}                     -> any JSON object          (param text.format)
 *   {"type": "json_schema", "schema": {...}}    -> that schema              (param text.format.schema)
 *
 * strict: false is constrained too (OpenAI then only tries to follow the schema; vLLM
 * constrains it either way, and so does this server).
 */
import type { GrammarSpec } from '../../grammar/grammarSpec.js';
import type { TextFormat } from './responsesSchema.js';

export function textFormatGrammar(format: TextFormat | null | undefined): GrammarSpec | null {
  if (!format || format.type === 'text') return null;
  if (format.type === 'json_object') return { type: 'json_object', param: 'text.format' };
  return { type: 'json_schema', schema: format.schema, param: 'text.format.schema' };
}
