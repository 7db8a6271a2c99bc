/** The response format and tools settings: checked as typed, turned into the request's fields. */
import { describe, expect, it } from 'vitest';
import { parseJsonText } from './jsonText.js';
import { chatRequestFields } from './requestFields.js';
import { defaultResponseFormat, parseSchemaText, responseFormatField, SAMPLE_SCHEMA } from './responseFormat.js';
import { defaultToolSettings, parseToolsText, SAMPLE_TOOLS, toolFields } from './toolSettings.js';

describe('JSON typed by the user', () => {
  it('says where the text stops being JSON', () => {
    const r = parseJsonText('{\n  "a": 1,\n}');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^not valid JSON: .*line 3, column 1/);
  });
});

describe('response format', () => {
  it('sends nothing for text, a JSON object type, or the schema with its name and strict: true', () => {
    expect(responseFormatField(defaultResponseFormat)).toEqual({ ok: true, value: undefined });
    expect(responseFormatField({ ...defaultResponseFormat, kind: 'json_object' })).toEqual({ ok: true, value: { type: 'json_object' } });
    expect(responseFormatField({ kind: 'json_schema', schemaName: 'weather_report', schemaText: SAMPLE_SCHEMA })).toEqual({
      ok: true,
      value: { type: 'json_schema', json_schema: { name: 'weather_report', schema: JSON.parse(SAMPLE_SCHEMA), strict: true } },
    });
  });

  it('refuses an empty schema, one that is not an object, and a bad name', () => {
    expect(parseSchemaText(' ')).toEqual({ ok: false, error: 'the JSON schema is empty: type one, or press "Sample schema"' });
    expect(parseSchemaText('[1]')).toEqual({ ok: false, error: 'a JSON schema is a JSON object, not an array' });
    expect(parseSchemaText('"x"')).toEqual({ ok: false, error: 'a JSON schema is a JSON object, not a string' });
    expect(responseFormatField({ kind: 'json_schema', schemaName: 'my schema', schemaText: SAMPLE_SCHEMA })).toEqual({ ok: false, error: 'the schema name must be 1 to 64 letters, digits, _ or -' });
  });
});

describe('tools', () => {
  it('reads the sample: two functions, get_weather(city) and get_time(timezone)', () => {
    const r = parseToolsText(SAMPLE_TOOLS);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.value.map((t) => t.function.name)).toEqual(['get_weather', 'get_time']);
      expect(r.value[0]!.function.parameters).toMatchObject({ required: ['city'] });
      expect(r.value[1]!.function.parameters).toMatchObject({ required: ['timezone'] });
    }
  });

  it('names the entry and field that is wrong, and refuses twin names', () => {
    expect(parseToolsText('{}')).toEqual({ ok: false, error: 'tools are a JSON array of {"type": "function", "function": {...}}, not an object' });
    expect(parseToolsText('[]')).toEqual({ ok: false, error: 'tools: the list is empty: add a tool, or clear the box for none' });
    const noName = parseToolsText('[{"type": "function", "function": {"description": "x"}}]');
    expect(noName.ok ? '' : noName.error).toMatch(/^tools\[0\]\.function\.name: /);
    const typo = parseToolsText('[{"type": "function", "function": {"name": "f", "paramters": {}}}]');
    expect(typo.ok ? '' : typo.error).toMatch(/^tools\[0\]\.function: .*paramters/);
    const twins = JSON.stringify([0, 1].map(() => ({ type: 'function', function: { name: 'f' } })));
    expect(parseToolsText(twins)).toEqual({ ok: false, error: 'two tools are named f: each function needs its own name' });
  });

  it('sends tools, tool_choice and parallel_tool_calls only with tools; a named choice as a function object', () => {
    expect(toolFields(defaultToolSettings)).toEqual({ ok: true, value: {} });
    expect(toolFields({ ...defaultToolSettings, toolChoice: 'get_weather' })).toEqual({ ok: true, value: {} });
    const tools = JSON.parse(SAMPLE_TOOLS) as unknown;
    expect(toolFields({ toolsText: SAMPLE_TOOLS, toolChoice: 'none', parallelToolCalls: true })).toEqual({ ok: true, value: { tools, tool_choice: 'none', parallel_tool_calls: true } });
    expect(toolFields({ toolsText: SAMPLE_TOOLS, toolChoice: 'get_weather', parallelToolCalls: false })).toEqual({
      ok: true,
      value: { tools, tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false },
    });
  });

  it('chatRequestFields names the setting that is wrong', () => {
    expect(chatRequestFields({ ...defaultResponseFormat, kind: 'json_schema', schemaText: '' }, defaultToolSettings)).toEqual({
      ok: false,
      error: 'response format: the JSON schema is empty: type one, or press "Sample schema"',
    });
    expect(chatRequestFields(defaultResponseFormat, { ...defaultToolSettings, toolsText: '[' }).ok).toBe(false);
    expect(chatRequestFields({ ...defaultResponseFormat, kind: 'json_object' }, defaultToolSettings)).toEqual({ ok: true, value: { response_format: { type: 'json_object' } } });
  });
});
