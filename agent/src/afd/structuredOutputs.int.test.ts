/**
 * Structured outputs and forced tool calls across topologies, as real role processes on the
 * CPU with a tiny random-weight checkpoint (whose unconstrained text is not JSON): the same
 * set of constrained requests (response_format json_schema through the openai client's
 * `parse` with a zod schema, json_object, vLLM's structured_outputs regex / choice /
 * grammar, the legacy guided_json on completions, a named and a required tool_choice,
 * streamed and not, and the Responses API with text.format and a forced function call),
 * sent at once to a colocated rank, to the attention rank of 1A1F and to both attention
 * ranks of 2A2F with dual-batch overlap. Every output is valid under its constraint
 * (ajv for schemas), streamed deltas reassemble to the non-streamed answer, and every
 * topology answers as the colocated rank (greedy). The same set on the demo model (a trained
 * checkpoint) is valid too.
 */
import Ajv from 'ajv';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { freePortBlock } from '@afd/native/ports';
import { findDemoModelDir } from '../model/demoModel.js';
import { testAddonBuilt } from '../testing/agentBundle.js';
import { RoleProcess, startTopology, stopTopology } from '../testing/RoleProcess.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';

const setup = useTinyModelSetup({ homePrefix: 'afd-structured-int-', arch: 'qwen3_moe' });
const ajv = new Ajv({ strict: false });
const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];
const base = { model: 'm', messages, temperature: 0, max_tokens: 80 };

const Weather = z.object({ city: z.string().max(12), temperature: z.number().int().min(-50).max(60), unit: z.enum(['C', 'F']) });
const weatherSchema = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 }, temperature: { type: 'integer', minimum: -50, maximum: 60 }, unit: { type: 'string', enum: ['C', 'F'] } },
  required: ['city', 'temperature', 'unit'],
  additionalProperties: false,
};
const timeSchema = { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET', 'JST'] } }, required: ['zone'], additionalProperties: false };
const tools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: weatherSchema } },
  { type: 'function', function: { name: 'get_time', description: 'Time in a zone', parameters: timeSchema } },
];
const schemaOf: Record<string, object> = { get_weather: weatherSchema, get_time: timeSchema };
const EMAIL = '[a-z]{2,6}@(example|test)\\.(com|org)';
const DATE_GRAMMAR = 'root ::= year "-" month "-" day\nyear ::= "20" [0-9] [0-9]\nmonth ::= "0" [1-9] | "1" [0-2]\nday ::= [0-2] [0-9]';

interface Call {
  name: string;
  arguments: string;
}
/** One answer in a neutral form: the text, or the calls; how it finished. */
interface Answer {
  text: string | null;
  calls: Call[];
  finish: string | null;
}

const callsOf = (m: OpenAI.ChatCompletionMessage): Call[] =>
  (m.tool_calls ?? []).map((c) => (c.type === 'function' ? { name: c.function.name, arguments: c.function.arguments } : { name: '?', arguments: '' }));

/** A streamed chat request, its deltas reassembled (content and tool-call fragments by index). */
async function streamed(client: OpenAI, body: OpenAI.ChatCompletionCreateParamsNonStreaming): Promise<Answer> {
  const out: Answer = { text: null, calls: [], finish: null };
  const ids = new Map<number, string>();
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.content) out.text = (out.text ?? '') + c.delta.content;
    for (const d of c.delta.tool_calls ?? []) {
      if (d.id) {
        expect(ids.has(d.index), 'a call id comes once, in its first delta').toBe(false);
        ids.set(d.index, d.id);
        out.calls[d.index] = { name: d.function?.name ?? '', arguments: '' };
      }
      out.calls[d.index]!.arguments += d.function?.arguments ?? '';
    }
    if (c.finish_reason) out.finish = c.finish_reason;
  }
  return out;
}

async function chat(client: OpenAI, body: OpenAI.ChatCompletionCreateParamsNonStreaming): Promise<Answer> {
  const c = (await client.chat.completions.create(body)).choices[0]!;
  return { text: c.message.content, calls: callsOf(c.message), finish: c.finish_reason };
}

/** Every request of the set, sent at once; answers by name. */
async function askAll(url: string): Promise<Map<string, Answer>> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  const extra = (fields: Record<string, unknown>) => fields as Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>;
  const named: OpenAI.ChatCompletionCreateParamsNonStreaming = { ...base, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } };
  const required: OpenAI.ChatCompletionCreateParamsNonStreaming = { ...base, tools, tool_choice: 'required', parallel_tool_calls: false };
  const jobs: [string, () => Promise<Answer>][] = [
    ['parse zod', async () => {
      const c = (await client.chat.completions.parse({ ...base, response_format: zodResponseFormat(Weather, 'weather') })).choices[0]!;
      expect(Weather.parse(c.message.parsed)).toEqual(c.message.parsed);
      return { text: c.message.content, calls: [], finish: c.finish_reason };
    }],
    ['json_schema streamed', () => streamed(client, { ...base, response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: weatherSchema, strict: true } } })],
    ['json_object', () => chat(client, { ...base, max_tokens: 200, response_format: { type: 'json_object' } })],
    ['regex', () => chat(client, { ...base, ...extra({ structured_outputs: { regex: EMAIL } }) })],
    ['choice', () => chat(client, { ...base, ...extra({ structured_outputs: { choice: ['sunny', 'rainy', 'foggy'] } }) })],
    ['grammar', () => chat(client, { ...base, ...extra({ structured_outputs: { grammar: DATE_GRAMMAR } }) })],
    ['guided_json completions', async () => {
      const body = { model: 'm', prompt: 'Weather report:', temperature: 0, max_tokens: 80, guided_json: weatherSchema } as OpenAI.CompletionCreateParamsNonStreaming;
      const c = (await client.completions.create(body)).choices[0]!;
      return { text: c.text, calls: [], finish: c.finish_reason };
    }],
    ['named tool', () => chat(client, named)],
    ['named tool streamed', () => streamed(client, named)],
    ['required tool', () => chat(client, required)],
    ['required tool streamed', () => streamed(client, required)],
    ['responses json_schema', async () => {
      const r = await client.responses.create({ model: 'm', input: 'Weather in Paris?', temperature: 0, max_output_tokens: 80, text: { format: { type: 'json_schema', name: 'weather', schema: weatherSchema, strict: true } } });
      return { text: r.output_text, calls: [], finish: r.status ?? null };
    }],
    ['responses forced call', async () => {
      const r = await client.responses.create({
        model: 'm', input: 'Weather in Paris?', temperature: 0, max_output_tokens: 80, tool_choice: 'required', parallel_tool_calls: false,
        tools: [{ type: 'function', name: 'get_weather', parameters: weatherSchema, strict: true }],
      });
      const calls = r.output.flatMap((o) => (o.type === 'function_call' ? [{ name: o.name, arguments: o.arguments }] : []));
      return { text: null, calls, finish: r.status ?? null };
    }],
  ];
  const answers = await Promise.all(jobs.map(([, f]) => f()));
  return new Map(jobs.map(([name], i) => [name, answers[i]!]));
}

const validate = (schema: object, text: string | null): boolean => ajv.validate(schema, JSON.parse(text ?? 'null'));

/** Every answer obeys its constraint. */
function expectValid(a: Map<string, Answer>, where: string): void {
  const text = (name: string) => a.get(name)!.text;
  for (const name of ['parse zod', 'json_schema streamed', 'guided_json completions', 'responses json_schema'])
    expect(validate(weatherSchema, text(name)), `${where}, ${name}: ${text(name)} ${JSON.stringify(ajv.errors)}`).toBe(true);
  const obj = a.get('json_object')!;
  // An object without a bound may outrun max_tokens; finished, it must parse to an object.
  if (obj.finish === 'stop') expect(typeof JSON.parse(obj.text!), `${where}, json_object: ${obj.text}`).toBe('object');
  else expect(obj.finish, `${where}, json_object`).toBe('length');
  expect(text('regex'), `${where}, regex`).toMatch(new RegExp(`^${EMAIL}$`));
  expect(['sunny', 'rainy', 'foggy'], `${where}, choice`).toContain(text('choice'));
  expect(text('grammar'), `${where}, grammar`).toMatch(/^20\d\d-(0[1-9]|1[0-2])-[0-2]\d$/);
  for (const name of ['named tool', 'named tool streamed', 'required tool', 'required tool streamed', 'responses forced call']) {
    const calls = a.get(name)!.calls;
    expect(calls.length, `${where}, ${name}: one call`).toBe(1);
    if (name.startsWith('named')) expect(calls[0]!.name).toBe('get_weather');
    for (const c of calls) expect(validate(schemaOf[c.name]!, c.arguments), `${where}, ${name}: ${c.arguments}`).toBe(true);
  }
  expect(a.get('named tool')!.finish).toBe('stop');
  expect(a.get('required tool')!.finish).toBe('tool_calls');
  expect(a.get('required tool')!.text).toBeNull();
  // Streamed deltas reassemble to the non-streamed answer.
  expect(a.get('named tool streamed')).toEqual(a.get('named tool'));
  expect(a.get('required tool streamed')).toEqual(a.get('required tool'));
  expect(text('json_schema streamed')).toBe(text('parse zod'));
  expect(a.get('responses forced call')!.finish).toBe('completed');
}

describe.skipIf(!testAddonBuilt())('structured outputs and forced tool calls across topologies (real processes, CPU)', () => {
  let reference: Map<string, Answer>;

  beforeAll(async () => {
    const rank = await RoleProcess.start({ role: 'colocated', model: setup.model, home: setup.home });
    reference = await askAll(await rank.ready(120_000));
    expect((await rank.stop()).code).toBe(0);
  }, 240_000);

  it('colocated: every output is valid under its constraint, and streams reassemble', () => {
    expectValid(reference, 'colocated');
  });

  it('1A1F: every answer equals the colocated one', { timeout: 240_000 }, async () => {
    const afdPort = await freePortBlock(1);
    const topo = await startTopology({ topology: '1A1F', afdPort, model: setup.model, home: setup.home });
    expect(await askAll(topo.attnUrls[0]!)).toEqual(reference);
    await stopTopology(topo.attn, topo.ffn);
  });

  it('2A2F with dual-batch overlap: both attention ranks answer as the colocated rank', { timeout: 300_000 }, async () => {
    const afdPort = await freePortBlock(2);
    const config = { stepDeadlineMs: 20_000, dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 2 } };
    const topo = await startTopology({ topology: '2A2F', afdPort, model: setup.model, home: setup.home, config });
    const [a0, a1] = await Promise.all(topo.attnUrls.map(askAll));
    expect(a0).toEqual(reference);
    expect(a1).toEqual(reference);
    await stopTopology(topo.attn, topo.ffn);
  });
});

const demo = findDemoModelDir();
describe.runIf(testAddonBuilt() && demo !== null)('structured outputs with the demo model (a trained checkpoint whose text is English, not JSON)', () => {
  it('the whole set is valid under its constraints on a colocated rank', { timeout: 240_000 }, async () => {
    const rank = await RoleProcess.start({ role: 'colocated', model: demo!, home: setup.home });
    const answers = await askAll(await rank.ready(120_000));
    expectValid(answers, 'demo model');
    expect((await rank.stop()).code).toBe(0);
  });
});
