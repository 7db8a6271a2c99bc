/**
 * Tool history as the chat templates read it (vLLM's conversions, per template): Qwen3's
 * takes the arguments as an object and a "" content, DeepSeek's concatenates the arguments
 * text and tells a tool-call turn by its null content; and a forced tool call next to
 * another output constraint is a 400 naming both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeDeepseekTokenizer } from '../testing/deepseekTokenizer.js';
import { qwenTokenizer } from '../testing/qwenTokenizer.js';
import { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import { templateToolStyle } from '../tools/templateToolStyle.js';
import { toTemplateMessages } from './chatMessages.js';
import { chatToolUse } from './chatToolUse.js';
import { chatRequestSchema } from './schemas.js';

const messages = chatRequestSchema.parse({
  model: 'm',
  messages: [
    { role: 'user', content: 'Weather?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
  ],
}).messages;

const dir = mkdtempSync(join(tmpdir(), 'afd-ds-tools-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tool history for the template', () => {
  it('Qwen3: arguments as an object, null content as ""', async () => {
    const template = (await qwenTokenizer()).chatTemplate!;
    const style = templateToolStyle(template.source);
    expect(style).toEqual({ argumentsAsText: false, nullContent: false });
    const converted = toTemplateMessages(messages, style);
    expect(converted[1]).toEqual({ role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } }] });
    expect(converted[2]).toEqual({ role: 'tool', content: 'sunny', tool_call_id: 'c1' });
  });

  it('DeepSeek: arguments as the JSON text, null content kept, rendered into its markup', async () => {
    writeDeepseekTokenizer(dir);
    const tok = await TextTokenizer.fromDir(dir);
    const style = templateToolStyle(tok.chatTemplate!.source);
    expect(style).toEqual({ argumentsAsText: true, nullContent: true });
    const text = tok.chatTemplate!.render(toTemplateMessages(messages, style), { addGenerationPrompt: true });
    expect(text).toContain('<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>');
    expect(text).toContain('<｜tool▁output▁begin｜>sunny<｜tool▁output▁end｜>');
  });
});

describe('a forced tool call and another output constraint', () => {
  it('is a 400 naming both', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const request = (over: object) => chatRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: 'x' }], tools, ...over });
    expect(() => chatToolUse(request({ tool_choice: 'required', response_format: { type: 'json_object' } }), 'hermes')).toThrow(/tool_choice "required" forces .* and response_format constrains it too/);
    expect(() => chatToolUse(request({ tool_choice: { type: 'function', function: { name: 'f' } }, guided_json: {} }), 'hermes')).toThrow(/tool_choice naming a function .* guided_json/);
    expect(chatToolUse(request({ tool_choice: 'required', response_format: { type: 'text' } }), null).use.grammar).not.toBeNull();
    expect(chatToolUse(request({ response_format: { type: 'json_object' } }), 'hermes').use.grammar).toBeNull(); // auto: the response_format's alone
  });

  it('the required grammar hoists the tools\' $defs, and refuses two tools defining one name differently', () => {
    const t = (name: string, def: object) => ({ type: 'function', function: { name, parameters: { type: 'object', properties: { a: { $ref: '#/$defs/A' } }, $defs: { A: def } } } });
    const request = (tools: object[]) => chatRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: 'x' }], tools, tool_choice: 'required' });
    const spec = chatToolUse(request([t('f', { type: 'string' }), t('g', { type: 'string' })]), null).use.grammar as { schema: Record<string, unknown> };
    expect(spec.schema['$defs']).toEqual({ A: { type: 'string' } });
    expect(JSON.stringify(spec.schema['items'])).not.toContain('"$defs":');
    expect(() => chatToolUse(request([t('f', { type: 'string' }), t('g', { type: 'integer' })]), null)).toThrow(/tools "f" and "g" both define \$defs\.A, differently/);
  });
});
