import { describe, expect, it } from 'vitest';
import { requestGrammar } from './requestGrammar.js';

const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };

/** The 400 a body gets: its param and message. */
function refusal(body: Record<string, unknown>): { param: string | null; message: string; kind: string } {
  try {
    requestGrammar(body);
  } catch (err) {
    const e = err as { param: string | null; message: string; kind: string };
    return { param: e.param, message: e.message, kind: e.kind };
  }
  throw new Error(`no refusal for ${JSON.stringify(body)}`);
}

describe('requestGrammar: OpenAI response_format', () => {
  it('text is no constraint; json_object and json_schema become specs naming their field', () => {
    expect(requestGrammar({ response_format: { type: 'text' } })).toBeUndefined();
    expect(requestGrammar({})).toBeUndefined();
    expect(requestGrammar({ response_format: { type: 'json_object' } })).toEqual({ type: 'json_object', param: 'response_format' });
    expect(requestGrammar({ response_format: { type: 'json_schema', json_schema: { name: 'thing', schema, strict: true, description: 'a thing' } } })).toEqual({
      type: 'json_schema',
      schema,
      param: 'response_format.json_schema.schema',
    });
  });

  it('refuses what it cannot honour, naming the field', () => {
    expect(refusal({ response_format: { type: 'structural_tag' } })).toMatchObject({ kind: 'invalid_request', param: 'response_format.type', message: expect.stringMatching(/structural_tag is not supported/) });
    expect(refusal({ response_format: { type: 'xml' } })).toMatchObject({ param: 'response_format.type' });
    expect(refusal({ response_format: { type: 'json_schema' } })).toMatchObject({ param: 'response_format.json_schema' });
    expect(refusal({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } })).toMatchObject({ param: 'response_format.json_schema.schema', message: expect.stringMatching(/missing/) });
    expect(refusal({ response_format: { type: 'json_schema', json_schema: { name: 'bad name', schema } } })).toMatchObject({ param: 'response_format.json_schema.name' });
    expect(refusal({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema, format: 'y' } } })).toMatchObject({ param: 'response_format.json_schema.format' });
    expect(refusal({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: [1] } } })).toMatchObject({ param: 'response_format.json_schema.schema' });
    expect(refusal({ response_format: 'json' })).toMatchObject({ param: 'response_format' });
  });
});

describe("requestGrammar: vLLM's structured_outputs and guided_*", () => {
  it('maps each constraint, JSON text schemas parsed, disable_any_whitespace honoured', () => {
    expect(requestGrammar({ structured_outputs: { json: schema } })).toEqual({ type: 'json_schema', schema, param: 'structured_outputs.json', anyWhitespace: false });
    expect(requestGrammar({ structured_outputs: { json: schema, disable_any_whitespace: false } })).toMatchObject({ anyWhitespace: true });
    expect(requestGrammar({ structured_outputs: { json: JSON.stringify(schema), disable_any_whitespace: true, disable_additional_properties: true } })).toEqual({
      type: 'json_schema',
      schema,
      param: 'structured_outputs.json',
      anyWhitespace: false,
    });
    expect(requestGrammar({ structured_outputs: { json_object: true } })).toEqual({ type: 'json_object', param: 'structured_outputs.json_object', anyWhitespace: false });
    expect(requestGrammar({ structured_outputs: { regex: '\\d+' } })).toEqual({ type: 'regex', pattern: '\\d+', param: 'structured_outputs.regex' });
    expect(requestGrammar({ structured_outputs: { choice: ['a', 'b'] } })).toEqual({ type: 'choice', choices: ['a', 'b'], param: 'structured_outputs.choice' });
    expect(requestGrammar({ structured_outputs: { grammar: 'root ::= "x"' } })).toEqual({ type: 'grammar', grammar: 'root ::= "x"', param: 'structured_outputs.grammar' });
    expect(requestGrammar({ guided_json: schema, guided_decoding_backend: 'xgrammar' })).toEqual({ type: 'json_schema', schema, param: 'guided_json' });
    expect(requestGrammar({ guided_json: true })).toEqual({ type: 'json_schema', schema: true, param: 'guided_json' });
    expect(requestGrammar({ guided_regex: 'a|b' })).toEqual({ type: 'regex', pattern: 'a|b', param: 'guided_regex' });
    expect(requestGrammar({ guided_choice: ['x'] })).toEqual({ type: 'choice', choices: ['x'], param: 'guided_choice' });
    expect(requestGrammar({ guided_grammar: 'root ::= "y"', guided_decoding_backend: 'auto' })).toEqual({ type: 'grammar', grammar: 'root ::= "y"', param: 'guided_grammar' });
    expect(requestGrammar({ guided_decoding_backend: 'xgrammar' })).toBeUndefined();
  });

  it('refuses bad values, unsupported options and other backends, naming the field', () => {
    expect(refusal({ structured_outputs: {} })).toMatchObject({ param: 'structured_outputs', message: expect.stringMatching(/exactly one of json, regex, choice, grammar, json_object; it has none/) });
    expect(refusal({ structured_outputs: { json: schema, regex: 'a' } })).toMatchObject({ param: 'structured_outputs', message: expect.stringMatching(/has json and regex/) });
    expect(refusal({ structured_outputs: { json: '{"type":' } })).toMatchObject({ param: 'structured_outputs.json', message: expect.stringMatching(/not valid JSON/) });
    expect(refusal({ structured_outputs: { json_object: false } })).toMatchObject({ param: 'structured_outputs.json_object' });
    expect(refusal({ structured_outputs: { regex: 'a', whitespace_pattern: '\\s' } })).toMatchObject({ param: 'structured_outputs.whitespace_pattern' });
    expect(refusal({ structured_outputs: { structural_tag: '{}' } })).toMatchObject({ param: 'structured_outputs.structural_tag' });
    expect(refusal({ structured_outputs: { choice: ['a', 1] } })).toMatchObject({ param: 'structured_outputs.choice[1]' });
    expect(refusal({ structured_outputs: { regex: 'a', backend: 'x' } })).toMatchObject({ param: 'structured_outputs.backend' });
    expect(refusal({ structured_outputs: { regex: 'a', disable_any_whitespace: 'yes' } })).toMatchObject({ param: 'structured_outputs.disable_any_whitespace' });
    expect(refusal({ guided_choice: 'a' })).toMatchObject({ param: 'guided_choice' });
    expect(refusal({ guided_regex: 'a', guided_decoding_backend: 'outlines' })).toMatchObject({ param: 'guided_decoding_backend', message: expect.stringMatching(/"outlines" is not available/) });
    expect(refusal({ guided_json: schema, guided_whitespace_pattern: ' *' })).toMatchObject({ param: 'guided_whitespace_pattern' });
    expect(refusal({ structural_tag: '{}' })).toMatchObject({ param: 'structural_tag' });
  });

  it('two fields that constrain the output at once are a 400 naming both', () => {
    expect(refusal({ response_format: { type: 'json_object' }, guided_json: schema })).toMatchObject({ param: 'guided_json', message: 'guided_json and response_format both constrain the output; send only one of them' });
    expect(refusal({ structured_outputs: { regex: 'a' }, guided_regex: 'b' })).toMatchObject({ param: 'guided_regex', message: expect.stringMatching(/structured_outputs/) });
    expect(requestGrammar({ response_format: { type: 'text' }, guided_regex: 'b' })).toMatchObject({ type: 'regex' });
  });
});
