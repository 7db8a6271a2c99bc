/**
 * The Playground's response format setting: plain text (nothing sent), any JSON object,
 * or JSON that follows a schema the user types. Sent as OpenAI's `response_format`; a
 * schema goes as `{type: "json_schema", json_schema: {name, schema, strict: true}}`.
 */
import type { ChatResponseFormat } from '@afd/shared';
import { jsonKind, parseJsonText, type Parsed } from './jsonText.js';

export type ResponseFormatKind = 'text' | 'json_object' | 'json_schema';

export interface ResponseFormatSettings {
  kind: ResponseFormatKind;
  /** Schema name sent with a JSON schema (letters, digits, _ and -). */
  schemaName: string;
  /** The JSON schema as typed. */
  schemaText: string;
}

export const defaultResponseFormat: ResponseFormatSettings = { kind: 'text', schemaName: 'answer', schemaText: '' };

/** What the sample schema button puts in the box. */
export const SAMPLE_SCHEMA = `{
  "type": "object",
  "properties": {
    "city": { "type": "string" },
    "temperature_c": { "type": "number" },
    "conditions": { "type": "string", "enum": ["sunny", "cloudy", "rain", "snow"] }
  },
  "required": ["city", "temperature_c", "conditions"],
  "additionalProperties": false
}`;

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The typed schema as a JSON object, or what is wrong with it. */
export function parseSchemaText(text: string): Parsed<Record<string, unknown>> {
  if (text.trim() === '') return { ok: false, error: 'the JSON schema is empty: type one, or press "Sample schema"' };
  const r = parseJsonText(text);
  if (!r.ok) return r;
  if (typeof r.value !== 'object' || r.value === null || Array.isArray(r.value)) return { ok: false, error: `a JSON schema is a JSON object, not ${jsonKind(r.value)}` };
  return { ok: true, value: r.value as Record<string, unknown> };
}

/** Why the schema name cannot be sent, or null. */
export function schemaNameProblem(name: string): string | null {
  return NAME.test(name) ? null : 'the schema name must be 1 to 64 letters, digits, _ or -';
}

/** The `response_format` to send (undefined for plain text), or what is wrong with the settings. */
export function responseFormatField(s: ResponseFormatSettings): Parsed<ChatResponseFormat | undefined> {
  if (s.kind === 'text') return { ok: true, value: undefined };
  if (s.kind === 'json_object') return { ok: true, value: { type: 'json_object' } };
  const nameProblem = schemaNameProblem(s.schemaName);
  if (nameProblem) return { ok: false, error: nameProblem };
  const schema = parseSchemaText(s.schemaText);
  if (!schema.ok) return schema;
  return { ok: true, value: { type: 'json_schema', json_schema: { name: s.schemaName, schema: schema.value, strict: true } } };
}
