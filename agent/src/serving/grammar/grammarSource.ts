/**
 * A GrammarSpec resolved to what xgrammar compiles (GrammarSource), with the cache key of
 * the compiled grammar. Every check that needs no vocabulary happens here, on the calling
 * thread, and fails with a 400 naming spec.param:
 *
 *   json_schema  -> the schema's JSON text (checked by SchemaChecker); true = any JSON value
 *   json_object  -> the schema {"type": "object"} (any JSON object; what vLLM compiles too)
 *   regex        -> the pattern (xgrammar's regex dialect; no lookaround, no \b, no flags)
 *   choice       -> an EBNF alternation of the strings, each an escaped literal
 *   grammar      -> the EBNF / GBNF text (root rule `root`)
 *
 * The key is a hash of the source as compiled: the schema re-serialised (so whitespace in
 * the request does not matter) with its keys in the request's order, since the order of
 * `properties` is the order of the output's fields.
 */
import { createHash } from 'node:crypto';
import { ServingError } from '../ServingError.js';
import type { GrammarSource } from './grammarProtocol.js';
import type { GrammarSpec } from './grammarSpec.js';
import type { SchemaChecker } from './schemaCheck.js';

/** A source and its cache key. */
export interface KeyedSource {
  key: string;
  source: GrammarSource;
}

const bad = (param: string, message: string): ServingError => new ServingError('invalid_request', message, param);

/** An EBNF string literal of `text`: quotes, backslashes and control characters escaped. */
export function ebnfLiteral(text: string): string {
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** The EBNF grammar whose outputs are exactly the given strings. */
export function choiceGrammar(choices: readonly string[]): string {
  return `root ::= ${choices.map(ebnfLiteral).join(' | ')}`;
}

function sourceOf(spec: GrammarSpec, schemas: SchemaChecker): GrammarSource {
  switch (spec.type) {
    case 'json_schema': {
      schemas.check(spec.schema, spec.param);
      const schema = spec.schema === true ? '{}' : JSON.stringify(spec.schema);
      return { kind: 'json_schema', schema, anyWhitespace: spec.anyWhitespace ?? false };
    }
    case 'json_object':
      return { kind: 'json_schema', schema: '{"type":"object"}', anyWhitespace: spec.anyWhitespace ?? false };
    case 'regex':
      if (typeof spec.pattern !== 'string' || spec.pattern === '') throw bad(spec.param, `${spec.param} must be a non-empty regular expression`);
      if (spec.pattern.includes('\0')) throw bad(spec.param, `${spec.param} contains a NUL character, which the regex engine cannot handle; remove it`);
      return { kind: 'regex', pattern: spec.pattern };
    case 'choice':
      if (!Array.isArray(spec.choices) || spec.choices.length === 0) throw bad(spec.param, `${spec.param} must be a non-empty list of strings`);
      spec.choices.forEach((c, i) => {
        if (typeof c !== 'string') throw bad(spec.param, `${spec.param}[${i}] must be a string, got ${c === null ? 'null' : typeof c}`);
      });
      return { kind: 'ebnf', grammar: choiceGrammar(spec.choices) };
    case 'grammar':
      if (typeof spec.grammar !== 'string' || spec.grammar.trim() === '') throw bad(spec.param, `${spec.param} must be a non-empty EBNF grammar with a rule named root`);
      return { kind: 'ebnf', grammar: spec.grammar };
  }
}

/** The source and key of a spec; throws a 400 naming spec.param when the spec cannot be used. */
export function keyedSourceOf(spec: GrammarSpec, schemas: SchemaChecker): KeyedSource {
  const source = sourceOf(spec, schemas);
  const key = createHash('sha256').update(JSON.stringify(source)).digest('hex');
  return { key, source };
}
