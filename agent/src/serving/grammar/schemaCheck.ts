/**
 * Checks a request's JSON Schema before xgrammar sees it, so that a bad one is a 400 that
 * names where it is wrong:
 *
 *   1. the schema must be a valid JSON Schema (draft 2020-12 meta-schema, through ajv);
 *   2. it may not use a validation keyword that xgrammar 0.1.27 would silently ignore (the
 *      output could then break the schema): multipleOf, uniqueItems: true, contains / minContains /
 *      maxContains, not, if / then / else, dependentRequired / dependentSchemas / dependencies,
 *      additionalItems, dynamic references, a string format it does not know, a pattern with
 *      minLength / maxLength / format beside it, propertyNames beside properties /
 *      patternProperties / additionalProperties, patternProperties beside properties or
 *      with several patterns.
 *
 * Annotations (title, description, default, examples, ...) and keywords JSON Schema does
 * not define are ignored, as JSON Schema itself says. References ($ref) are resolved by
 * xgrammar (the check worker): one it cannot resolve is a 400 from there.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ServingError } from '../ServingError.js';

/** String formats xgrammar turns into a grammar (any other would be ignored). */
const FORMATS = new Set(['email', 'date', 'time', 'date-time', 'duration', 'ipv4', 'ipv6', 'hostname', 'uuid', 'uri', 'uri-reference', 'uri-template', 'json-pointer', 'relative-json-pointer']);

/** Validation keywords xgrammar ignores, with what to do instead. */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  multipleOf: 'multipleOf is not supported; drop it or list the values with enum',
  contains: 'contains is not supported; describe the items with items / prefixItems',
  minContains: 'minContains is not supported',
  maxContains: 'maxContains is not supported',
  not: 'not is not supported; describe what is allowed instead',
  if: 'if / then / else is not supported; use anyOf',
  then: 'if / then / else is not supported; use anyOf',
  else: 'if / then / else is not supported; use anyOf',
  dependentRequired: 'dependentRequired is not supported; use anyOf',
  dependentSchemas: 'dependentSchemas is not supported; use anyOf',
  dependencies: 'dependencies is not supported; use anyOf',
  additionalItems: 'additionalItems is not supported; use prefixItems with items',
  $dynamicRef: '$dynamicRef is not supported; use $ref',
  $recursiveRef: '$recursiveRef is not supported; use $ref',
};

/** Keywords whose value is one schema / a map of schemas / a list of schemas. */
const ONE = ['additionalProperties', 'items', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'contains', 'not', 'if', 'then', 'else'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const LIST = ['prefixItems', 'anyOf', 'oneOf', 'allOf'];

type Schema = Record<string, unknown>;
const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const pointer = (path: string): string => path || '(the root)';

/** The first problem of one schema object (not its subschemas), or null. */
function keywordProblem(s: Schema): string | null {
  for (const key of Object.keys(s)) {
    const why = UNSUPPORTED[key];
    if (why) return why;
  }
  if (s['uniqueItems'] === true) return 'uniqueItems: true is not supported; drop it (or send false)';
  const format = s['format'];
  if (typeof format === 'string' && !FORMATS.has(format)) return `format "${format}" is not supported; supported formats: ${[...FORMATS].join(', ')}`;
  if ('pattern' in s && ('minLength' in s || 'maxLength' in s || 'format' in s)) return 'pattern together with minLength / maxLength / format is not supported; put the length in the pattern';
  if (isObject(s['propertyNames']) && ('properties' in s || 'patternProperties' in s || isObject(s['additionalProperties']))) {
    return 'propertyNames together with properties / patternProperties / additionalProperties is not supported';
  }
  if (isObject(s['patternProperties']) && ('properties' in s || Object.keys(s['patternProperties']).length > 1)) {
    return 'patternProperties is supported only alone, with one pattern';
  }
  return null;
}

/** The first unsupported keyword in the schema or its subschemas: [JSON pointer, why], or null. */
export function unsupportedKeyword(schema: unknown, path = ''): [string, string] | null {
  if (!isObject(schema)) return null;
  const own = keywordProblem(schema);
  if (own) return [pointer(path), own];
  const visit = (sub: unknown, at: string): [string, string] | null => unsupportedKeyword(sub, at);
  for (const key of ONE) {
    const found = key in schema ? visit(schema[key], `${path}/${key}`) : null;
    if (found) return found;
  }
  for (const key of MAP) {
    const map = schema[key];
    if (!isObject(map)) continue;
    for (const [name, sub] of Object.entries(map)) {
      const found = visit(sub, `${path}/${key}/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`);
      if (found) return found;
    }
  }
  for (const key of LIST) {
    const list = schema[key];
    if (!Array.isArray(list)) continue;
    for (let i = 0; i < list.length; i++) {
      const found = visit(list[i], `${path}/${key}/${i}`);
      if (found) return found;
    }
  }
  return null;
}

/** Validates request schemas against the JSON Schema meta-schema (one ajv instance; nothing is compiled or registered). */
export class SchemaChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });

  constructor() {
    // ajv compiles the meta-schema on first use (~85 ms): here, at start, not in a request.
    this.ajv.validateSchema({});
  }

  /**
   * Throws a 400 naming `param` and the place in the schema when the schema is not a valid
   * JSON Schema or uses a keyword xgrammar cannot honour.
   */
  check(schema: unknown, param: string): void {
    if (schema === false) throw new ServingError('invalid_request', `${param} is false, a schema no output can match; send a schema (or true for any JSON value)`, param);
    if (schema === true) return;
    if (!isObject(schema)) throw new ServingError('invalid_request', `${param} must be a JSON Schema object (or true), got ${Array.isArray(schema) ? 'an array' : typeof schema}`, param);
    // The meta-schema of 2020-12 judges every schema (a $schema naming an older draft is not loaded).
    const { $schema: _ignored, ...body } = schema;
    if (!this.ajv.validateSchema(body)) {
      const e = this.ajv.errors?.[0];
      const allowed = (e?.params as { allowedValues?: unknown[] } | undefined)?.allowedValues;
      const detail = e ? `at ${pointer(e.instancePath)}: ${e.message ?? 'invalid'}${allowed ? ` (${allowed.join(', ')})` : ''}` : 'invalid';
      throw new ServingError('invalid_request', `${param} is not a valid JSON Schema: ${detail}`, param);
    }
    const bad = unsupportedKeyword(schema);
    if (bad) throw new ServingError('invalid_request', `${param} uses what structured outputs cannot enforce, at ${bad[0]}: ${bad[1]}`, param);
  }
}
