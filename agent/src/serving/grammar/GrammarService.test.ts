/**
 * The grammar service with real xgrammar workers (the agent bundle, built from the current
 * sources) and the real Qwen3 vocabulary: random walks through each kind of grammar decode
 * (real tokenizer) to outputs the spec accepts, the cache answers a spec it has compiled at
 * once, bad specs are 400s that name the request field and what is wrong.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentScript } from '../../testing/agentBundle.js';
import { qwenTokenizer, qwenTokenizerDir } from '../testing/qwenTokenizer.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';
import { ServingError } from '../ServingError.js';
import type { GrammarSpec } from './grammarSpec.js';
import { GrammarService } from './GrammarService.js';
import { walkGrammar } from './testing/grammarWalk.js';

const VOCAB = 151_936;
const EOS = [151_645, 151_643];
let tok: TextTokenizer;
let service: GrammarService;
let closers: Set<number>;

beforeAll(async () => {
  tok = await qwenTokenizer();
  service = new GrammarService({ script: await agentScript(), modelDir: qwenTokenizerDir(), vocabSize: VOCAB, stopTokenIds: EOS });
  closers = new Set();
  for (let id = 0; id < 151_643; id++) if (/["}\]]/.test(tok.vocabString(id) ?? '')) closers.add(id);
}, 120_000);
afterAll(() => service?.close());

/** Walks `spec`'s grammar with several seeds; returns the decoded outputs (every walk must end at a stop token). */
async function outputs(spec: GrammarSpec, seeds = [1, 2, 3, 4]): Promise<string[]> {
  const handle = await service.compile(spec);
  const texts: string[] = [];
  for (const seed of seeds) {
    const walk = await walkGrammar(service, handle, { vocabSize: VOCAB, stopTokenIds: EOS, closers, seed });
    expect(walk.ended, `seed ${seed} did not reach the end of the grammar: ${tok.decode(walk.ids)}`).toBe(true);
    texts.push(tok.decode(walk.ids));
  }
  return texts;
}

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    mood: { enum: ['happy', 'sad', 'ok "fine"'] },
    admin: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 3 },
    address: { type: 'object', properties: { city: { type: 'string', maxLength: 8 }, zip: { type: 'string', pattern: '^[0-9]{5}$' } }, required: ['city'] },
  },
  required: ['name', 'age', 'mood', 'admin'],
};

async function expectBadSpec(spec: GrammarSpec, message: RegExp): Promise<ServingError> {
  const err = await service.compile(spec).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServingError);
  const se = err as ServingError;
  expect(se.kind).toBe('invalid_request');
  expect(se.param).toBe(spec.param);
  expect(se.message).toMatch(message);
  expect(se.message).toContain(spec.param);
  return se;
}

describe('GrammarService: outputs follow the spec', () => {
  it('json_schema (any whitespace): every walk decodes to JSON the schema accepts', async () => {
    const validate = new Ajv2020({ strict: false }).compile(person);
    for (const text of await outputs({ type: 'json_schema', schema: person, param: 'response_format.json_schema.schema', anyWhitespace: true })) {
      const value: unknown = JSON.parse(text);
      expect(validate(value), `${text}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it('json_schema with fixed whitespace: one line, ", " and ": " between elements', async () => {
    const validate = new Ajv2020({ strict: false }).compile(person);
    for (const text of await outputs({ type: 'json_schema', schema: person, param: 'structured_outputs.json', anyWhitespace: false })) {
      expect(validate(JSON.parse(text)), text).toBe(true);
      expect(text.startsWith('{"name": "')).toBe(true);
      expect(text).not.toMatch(/\n/);
    }
  });

  it('json_object: any JSON object', async () => {
    for (const text of await outputs({ type: 'json_object', param: 'response_format' }, [5, 6])) {
      const value: unknown = JSON.parse(text);
      expect(typeof value === 'object' && value !== null && !Array.isArray(value), text).toBe(true);
    }
  });

  it('choice: exactly one of the strings, quotes, backslashes, newlines and CJK included', async () => {
    const choices = ['yes', 'no', 'say "hi"', 'a\\b', 'line\nbreak', '世界'];
    const seen = new Set<string>();
    for (const text of await outputs({ type: 'choice', choices, param: 'structured_outputs.choice' }, [1, 2, 3, 4, 5, 6, 7, 8])) {
      expect(choices).toContain(text);
      seen.add(text);
    }
    expect(seen.size).toBeGreaterThan(1);
  });

  it('regex: the whole output matches', async () => {
    for (const text of await outputs({ type: 'regex', pattern: '[0-9]{3}-[a-z]{2,4}(\\.[A-Z])?', param: 'structured_outputs.regex' })) {
      expect(text).toMatch(/^[0-9]{3}-[a-z]{2,4}(\.[A-Z])?$/);
    }
  });

  it('grammar (EBNF, root rule root): sums of numbers', async () => {
    const grammar = 'root ::= term ("+" term)*\nterm ::= [0-9] | "(" [0-9] "*" [0-9] ")"';
    for (const text of await outputs({ type: 'grammar', grammar, param: 'structured_outputs.grammar' })) {
      expect(text).toMatch(/^([0-9]|\([0-9]\*[0-9]\))(\+([0-9]|\([0-9]\*[0-9]\)))*$/);
    }
  });

  it('answers a spec it compiled from its cache: same handle, no worker round trip', async () => {
    const schema = { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'string' } }, required: ['x'] };
    const spec: GrammarSpec = { type: 'json_schema', schema, param: 'guided_json' };
    const first = await service.compile(spec);
    expect(first.compileMs).toBeGreaterThan(0);
    const t0 = performance.now();
    const again = await service.compile({ ...spec, schema: JSON.parse(JSON.stringify(schema)) as Record<string, unknown>, param: 'response_format.json_schema.schema' });
    const hitMs = performance.now() - t0;
    expect(again).toBe(first);
    expect(hitMs).toBeLessThan(5); // a hash and a map lookup (sanity, not a benchmark)
    // Property order is output order: another order is another grammar.
    const swapped = await service.compile({ ...spec, schema: { type: 'object', properties: { y: schema.properties.y, x: schema.properties.x }, required: ['x'] } });
    expect(swapped.key).not.toBe(first.key);
  });
});

describe('GrammarService: bad specs are 400s naming the field', () => {
  it('an invalid JSON Schema names the place in it', async () => {
    await expectBadSpec({ type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'strin' } } }, param: 'response_format.json_schema.schema' }, /not a valid JSON Schema: at \/properties\/a\/type/);
  });

  it('a keyword xgrammar would ignore is refused, with its place', async () => {
    await expectBadSpec({ type: 'json_schema', schema: { type: 'object', properties: { n: { type: 'integer', multipleOf: 3 } } }, param: 'guided_json' }, /at \/properties\/n: multipleOf is not supported/);
    await expectBadSpec({ type: 'json_schema', schema: { type: 'string', format: 'color' }, param: 'guided_json' }, /format "color" is not supported/);
  });

  it("what xgrammar refuses or would partly ignore comes back with xgrammar's reason", async () => {
    await expectBadSpec({ type: 'json_schema', schema: { type: 'object', properties: { a: { $ref: '#/$defs/B' } } }, param: 'structured_outputs.json' }, /cannot be used: .*\$defs/);
    await expectBadSpec({ type: 'json_schema', schema: { allOf: [{ type: 'object' }, { required: ['a'] }] }, param: 'structured_outputs.json' }, /would ignore part of it: .*allOf/);
    await expectBadSpec({ type: 'regex', pattern: '(abc', param: 'structured_outputs.regex' }, /Regex parsing error .*parenthesis is not closed/);
    await expectBadSpec({ type: 'regex', pattern: '(?=a)b', param: 'guided_regex' }, /Lookahead is not supported/);
    await expectBadSpec({ type: 'grammar', grammar: 'root ::= "a" | ', param: 'structured_outputs.grammar' }, /EBNF parser error at line 1/);
    await expectBadSpec({ type: 'grammar', grammar: 'start ::= "a"', param: 'guided_grammar' }, /root rule with name "root" is not found/);
  });

  it('shapes checked before xgrammar: false schema, empty choices, empty pattern', async () => {
    await expectBadSpec({ type: 'json_schema', schema: false, param: 'guided_json' }, /no output can match/);
    await expectBadSpec({ type: 'choice', choices: [], param: 'guided_choice' }, /non-empty list/);
    await expectBadSpec({ type: 'regex', pattern: '', param: 'guided_regex' }, /non-empty/);
  });

  it('a bad spec sent again fails at once (its failure is cached), and good specs still compile', async () => {
    const spec: GrammarSpec = { type: 'grammar', grammar: 'root ::= ("x" | ', param: 'structured_outputs.grammar' };
    await expectBadSpec(spec, /EBNF parser error/);
    const t0 = performance.now();
    await expectBadSpec({ ...spec, param: 'guided_grammar' }, /EBNF parser error/);
    expect(performance.now() - t0).toBeLessThan(5);
    expect((await outputs({ type: 'choice', choices: ['ok'], param: 'guided_choice' }, [1]))[0]).toBe('ok');
  });
});
