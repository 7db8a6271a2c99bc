/**
 * What constrains a chat or completions request's output, from its body (pure; no
 * compilation): OpenAI's response_format, vLLM's structured_outputs (StructuredOutputsParams)
 * and vLLM's older guided_* fields. At most one of them may constrain a request; each bad
 * value is a 400 (ServingError invalid_request) that names its field.
 *
 *   response_format      {type: "text"} (none) | {type: "json_object"} | {type: "json_schema",
 *                        json_schema: {name, schema, strict?, description?}}; structural_tag: 400
 *   structured_outputs   exactly one of json (schema object / JSON text / true), regex, choice,
 *                        grammar, json_object: true; options disable_any_whitespace (JSON on one
 *                        line with ", " and ": "), disable_additional_properties (either value:
 *                        objects never get properties their schema does not allow, as with vLLM's
 *                        xgrammar backend); whitespace_pattern and structural_tag: 400
 *   guided_json, guided_regex, guided_choice, guided_grammar
 *   guided_decoding_backend  "xgrammar" or "auto" (the only engine here); others: 400
 *   guided_whitespace_pattern, structural_tag  400 (not supported)
 *
 * strict and description of a json_schema are accepted: the schema is always enforced, and
 * the description is not shown to the model (as on vLLM).
 */
import { ServingError } from '../ServingError.js';
import type { GrammarSpec } from './grammarSpec.js';

type Body = Readonly<Record<string, unknown>>;

const bad = (param: string, message: string): ServingError => new ServingError('invalid_request', `${param} ${message}`, param);
const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);
const kind = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

/** Refuses keys of `obj` beyond `known` (nothing below the top level is silently ignored). */
function onlyKeys(obj: Body, known: readonly string[], param: string): void {
  const extra = Object.keys(obj).find((k) => !known.includes(k));
  if (extra !== undefined) throw bad(`${param}.${extra}`, `is not a field of ${param} (its fields: ${known.join(', ')}); remove it`);
}

function str(v: unknown, param: string): string {
  if (typeof v !== 'string') throw bad(param, `must be a string, got ${kind(v)}`);
  return v;
}

function bool(v: unknown, param: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(param, `must be true or false, got ${kind(v)}`);
  return v;
}

/** A JSON Schema given as an object, true, or JSON text. */
function schemaOf(v: unknown, param: string): Record<string, unknown> | boolean {
  let schema = v;
  if (typeof v === 'string') {
    try {
      schema = JSON.parse(v);
    } catch (err) {
      throw bad(param, `is not valid JSON (${(err as Error).message}); send the JSON Schema as an object or JSON text`);
    }
  }
  if (typeof schema === 'boolean' || isObject(schema)) return schema as Record<string, unknown> | boolean;
  throw bad(param, `must be a JSON Schema (an object, or true), got ${kind(schema)}`);
}

function choicesOf(v: unknown, param: string): string[] {
  if (!Array.isArray(v)) throw bad(param, `must be a list of strings, got ${kind(v)}`);
  return v.map((c, i) => str(c, `${param}[${i}]`));
}

function fromResponseFormat(v: unknown): GrammarSpec | undefined {
  const p = 'response_format';
  if (!isObject(v)) throw bad(p, `must be an object such as {"type": "json_schema", "json_schema": {...}}, got ${kind(v)}`);
  if (v['type'] === 'text' || v['type'] === 'json_object') {
    onlyKeys(v, ['type'], p);
    return v['type'] === 'text' ? undefined : { type: 'json_object', param: p };
  }
  if (v['type'] === 'structural_tag') throw bad(`${p}.type`, 'structural_tag is not supported; use json_schema, or tools for function calls');
  if (v['type'] !== 'json_schema') throw bad(`${p}.type`, `must be "text", "json_object" or "json_schema", got ${JSON.stringify(v['type'])}`);
  onlyKeys(v, ['type', 'json_schema'], p);
  const js = v['json_schema'];
  const jp = `${p}.json_schema`;
  if (!isObject(js)) throw bad(jp, 'is required with type "json_schema": {"name": "...", "schema": {...}}');
  onlyKeys(js, ['name', 'schema', 'strict', 'description'], jp);
  const name = str(js['name'], `${jp}.name`);
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw bad(`${jp}.name`, 'must be 1 to 64 letters, digits, underscores or dashes');
  bool(js['strict'], `${jp}.strict`);
  if (js['description'] !== undefined && js['description'] !== null) str(js['description'], `${jp}.description`);
  if (js['schema'] === undefined || js['schema'] === null) throw bad(`${jp}.schema`, 'is missing; send the JSON Schema the output must follow');
  return { type: 'json_schema', schema: schemaOf(js['schema'], `${jp}.schema`), param: `${jp}.schema` };
}

const CONSTRAINTS = ['json', 'regex', 'choice', 'grammar', 'json_object', 'structural_tag'] as const;

function fromStructuredOutputs(v: unknown): GrammarSpec {
  const p = 'structured_outputs';
  if (!isObject(v)) throw bad(p, `must be an object such as {"json": {...}}, got ${kind(v)}`);
  onlyKeys(v, [...CONSTRAINTS, 'disable_any_whitespace', 'disable_additional_properties', 'whitespace_pattern'], p);
  const given = CONSTRAINTS.filter((k) => v[k] !== undefined && v[k] !== null);
  if (given.length !== 1) {
    const what = given.length === 0 ? 'has none' : `has ${given.join(' and ')}`;
    throw bad(p, `needs exactly one of ${CONSTRAINTS.slice(0, 5).join(', ')}; it ${what}`);
  }
  if (v['whitespace_pattern'] !== undefined && v['whitespace_pattern'] !== null) throw bad(`${p}.whitespace_pattern`, 'is not supported (the xgrammar engine has no whitespace pattern); use disable_any_whitespace');
  bool(v['disable_additional_properties'], `${p}.disable_additional_properties`);
  // Compact JSON unless the request asks otherwise (disable_any_whitespace: false): see grammarSpec.ts.
  const anyWhitespace = bool(v['disable_any_whitespace'], `${p}.disable_any_whitespace`) === false;
  const key = given[0]!;
  const param = `${p}.${key}`;
  switch (key) {
    case 'json':
      return { type: 'json_schema', schema: schemaOf(v[key], param), param, anyWhitespace };
    case 'json_object':
      if (v[key] !== true) throw bad(param, 'must be true (or omitted)');
      return { type: 'json_object', param, anyWhitespace };
    case 'regex':
      return { type: 'regex', pattern: str(v[key], param), param };
    case 'choice':
      return { type: 'choice', choices: choicesOf(v[key], param), param };
    case 'grammar':
      return { type: 'grammar', grammar: str(v[key], param), param };
    case 'structural_tag':
      throw bad(param, 'is not supported; use json, regex, choice or grammar, or tools for function calls');
  }
}

/** The legacy guided_* constraint fields. */
const GUIDED: Readonly<Record<string, (v: unknown) => GrammarSpec>> = {
  guided_json: (v) => ({ type: 'json_schema', schema: schemaOf(v, 'guided_json'), param: 'guided_json' }),
  guided_regex: (v) => ({ type: 'regex', pattern: str(v, 'guided_regex'), param: 'guided_regex' }),
  guided_choice: (v) => ({ type: 'choice', choices: choicesOf(v, 'guided_choice'), param: 'guided_choice' }),
  guided_grammar: (v) => ({ type: 'grammar', grammar: str(v, 'guided_grammar'), param: 'guided_grammar' }),
};

/**
 * The grammar a request body asks for, or undefined for free text. Throws a 400 naming the
 * field when a value is bad, unsupported, or when two fields constrain the output at once.
 */
export function requestGrammar(body: Body): GrammarSpec | undefined {
  const present = (k: string): boolean => body[k] !== undefined && body[k] !== null;
  const backend = body['guided_decoding_backend'];
  if (present('guided_decoding_backend') && backend !== 'xgrammar' && backend !== 'auto') {
    throw bad('guided_decoding_backend', `${JSON.stringify(backend)} is not available; this server constrains outputs with xgrammar (send "xgrammar" or "auto", or omit it)`);
  }
  if (present('guided_whitespace_pattern')) throw bad('guided_whitespace_pattern', 'is not supported (the xgrammar engine has no whitespace pattern); omit it');
  if (present('structural_tag')) throw bad('structural_tag', 'is not supported; use response_format / structured_outputs, or tools for function calls');
  const specs: [string, GrammarSpec][] = [];
  if (present('response_format')) {
    const spec = fromResponseFormat(body['response_format']);
    if (spec) specs.push(['response_format', spec]);
  }
  if (present('structured_outputs')) specs.push(['structured_outputs', fromStructuredOutputs(body['structured_outputs'])]);
  for (const [field, make] of Object.entries(GUIDED)) if (present(field)) specs.push([field, make(body[field])]);
  if (specs.length > 1) {
    const [first, second] = [specs[0]![0], specs[1]![0]];
    throw bad(second, `and ${first} both constrain the output; send only one of them`);
  }
  return specs[0]?.[1];
}
