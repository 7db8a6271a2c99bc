/**
 * Tool calling on /v1/chat/completions through the official `openai` client: a fake engine
 * scripted to write a given text, the real Qwen3 tokenizer and chat template. tool_choice
 * auto (calls read, streamed through the client's stream helper), tool history rendered by
 * the template, required / named (the grammar they put on GenerateParams, the forced output
 * read back), and the 400s.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GenerateParams } from '../ServingEngine.js';
import { agentScript } from '../../testing/agentBundle.js';
import { GrammarService } from '../grammar/GrammarService.js';
import { qwenTokenizer, qwenTokenizerDir } from '../testing/qwenTokenizer.js';
import { scriptedOutput } from '../testing/scriptedOutput.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import type { TextTokenizer } from '../tokenizer/TextTokenizer.js';

const EOS = 151_645;
const script = scriptedOutput(EOS);
let tok: TextTokenizer;
let srv: TestServer;
let client: OpenAI;
let submitted: GenerateParams[];

const weather: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const clock: OpenAI.ChatCompletionTool = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } } };
const user: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];

/** The next samples write `text` (Qwen3 tokens), then EOS. */
const writes = (text: string): void => script.set(tok.encode(text, false));
const call = (name: string, args: object): string => `<tool_call>\n${JSON.stringify({ name, arguments: args }).replace(/":/g, '": ').replace(/,"/g, ', "')}\n</tool_call>`;

beforeAll(async () => {
  tok = await qwenTokenizer();
  srv = await startTestServer({ engine: { nextToken: script.nextToken } });
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const submitAllAsync = srv.api.serving.submitAllAsync.bind(srv.api.serving);
  // The grammar is recorded and left out (this fake server has no grammar service): these
  // tests read the forced outputs back; the grammar's effect is tested on real ranks.
  vi.spyOn(srv.api.serving, 'submitAllAsync').mockImplementation((params) => {
    submitted.push(...params);
    return submitAllAsync(params.map(({ grammar: _grammar, ...p }) => p));
  });
});
afterAll(() => srv.close());
beforeEach(() => {
  submitted = [];
});

describe('tool_choice auto (hermes, detected from the Qwen3 template)', () => {
  it('reads the calls: message.tool_calls, content null, finish_reason tool_calls', async () => {
    writes(`${call('get_weather', { city: 'Paris' })}\n${call('get_time', { tz: 'CET' })}`);
    const r = await client.chat.completions.create({ model: 'tiny', messages: user, tools: [weather, clock] });
    const c = r.choices[0]!;
    expect(c.finish_reason).toBe('tool_calls');
    expect(c.message.content).toBeNull();
    expect(c.message.tool_calls!.map((t) => t.type === 'function' && [t.function.name, JSON.parse(t.function.arguments) as unknown])).toEqual([
      ['get_weather', { city: 'Paris' }],
      ['get_time', { tz: 'CET' }],
    ]);
    for (const t of c.message.tool_calls!) expect(t.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(submitted[0]!.skipSpecialTokens).toBe(false); // the parser sees the markup, as vLLM does
    expect(submitted[0]!.grammar).toBeUndefined();
  });

  it('text without calls stays content (finish_reason stop); parallel_tool_calls false keeps the first call', async () => {
    writes('It is sunny.');
    const plain = await client.chat.completions.create({ model: 'tiny', messages: user, tools: [weather] });
    expect(plain.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'It is sunny.', tool_calls: [] } });
    writes(`Checking.\n${call('get_weather', { city: 'Paris' })}${call('get_time', {})}`);
    const one = await client.chat.completions.create({ model: 'tiny', messages: user, tools: [weather, clock], parallel_tool_calls: false });
    expect(one.choices[0]!.message.content).toBe('Checking.');
    expect(one.choices[0]!.message.tool_calls!.map((t) => t.type === 'function' && t.function.name)).toEqual(['get_weather']);
  });

  it('streams the calls through the client\'s stream helper: no markup in content, the same calls as non-streamed', async () => {
    writes(`Let me look.\n\n${call('get_weather', { city: 'Paris, "FR"' })}\n${call('get_time', { tz: 'Europe/Paris' })}`);
    const stream = client.chat.completions.stream({ model: 'tiny', messages: user, tools: [weather, clock] });
    let content = '';
    const argDeltas: string[] = [];
    stream.on('content.delta', (e) => (content += e.delta));
    stream.on('tool_calls.function.arguments.delta', (e) => argDeltas.push(e.arguments_delta));
    const done = await stream.finalChatCompletion();
    const c = done.choices[0]!;
    expect(content).toBe('Let me look.');
    expect(c.finish_reason).toBe('tool_calls');
    expect(c.message.tool_calls!.map((t) => [t.function.name, t.function.arguments])).toEqual([
      ['get_weather', '{"city": "Paris, \\"FR\\""}'],
      ['get_time', '{"tz": "Europe/Paris"}'],
    ]);
    expect(argDeltas.length).toBeGreaterThan(2); // the arguments come as the tokens do
    expect(new Set(c.message.tool_calls!.map((t) => t.id)).size).toBe(2);
  });

  it('n = 2: each choice has its own calls', async () => {
    writes(call('get_weather', { city: 'Oslo' }));
    const r = await client.chat.completions.create({ model: 'tiny', messages: user, tools: [weather], n: 2 });
    expect(r.choices.map((c) => c.message.tool_calls!.length)).toEqual([1, 1]);
    expect(r.choices[0]!.message.tool_calls![0]!.id).not.toBe(r.choices[1]!.message.tool_calls![0]!.id);
    const chunks = await client.chat.completions.create({ model: 'tiny', messages: user, tools: [weather], n: 2, stream: true });
    const names = new Map<number, string>();
    for await (const chunk of chunks) for (const ch of chunk.choices) for (const t of ch.delta.tool_calls ?? []) if (t.function?.name) names.set(ch.index, t.function.name);
    expect([...names.entries()].sort()).toEqual([
      [0, 'get_weather'],
      [1, 'get_weather'],
    ]);
  });

  it('tool_choice none: the tools reach the template, the text is not read for calls', async () => {
    writes(call('get_weather', { city: 'Paris' }));
    const r = await client.chat.completions.create({ model: 'tiny', messages: user, tools: [weather], tool_choice: 'none', return_token_ids: true } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(r.choices[0]).toMatchObject({ finish_reason: 'stop', message: { tool_calls: [] } });
    expect(r.choices[0]!.message.content).toContain('<tool_call>');
    expect(tok.decode((r as unknown as { prompt_token_ids: number[] }).prompt_token_ids, false)).toContain('"name": "get_weather"');
  });
});

describe('tool history rendered by the Qwen3 template', () => {
  it('assistant tool_calls (content null) and tool results reach the prompt with the tools JSON', async () => {
    writes('It is 21 degrees.');
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      ...user,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
    ];
    const r = await client.chat.completions.create({ model: 'tiny', messages, tools: [weather], return_token_ids: true } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(r.choices[0]!.message.content).toBe('It is 21 degrees.');
    const prompt = tok.decode((r as unknown as { prompt_token_ids: number[] }).prompt_token_ids, false);
    expect(prompt).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n</tools>');
    // The arguments reach the template as an object (re-serialised by its tojson), the result as sent.
    expect(prompt).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>');
    expect(prompt).toContain('<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
  });

  it('bad history: tool messages need tool_call_id, arguments must be a JSON object', async () => {
    const bad = async (messages: unknown[], param: string): Promise<void> => {
      const err = await client.chat.completions.create({ model: 'tiny', messages: messages as OpenAI.ChatCompletionMessageParam[] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as { param: string }).param).toBe(param);
    };
    await bad([...user, { role: 'tool', content: 'x' }], 'messages.1.tool_call_id');
    await bad([...user, { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: 'not json' } }] }], 'messages.1.tool_calls.0.function.arguments');
    await bad([{ role: 'user', content: 'x', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }] }], 'messages.0.tool_calls');
  });
});

describe('tool_choice required and named: the grammar on GenerateParams, the forced output read back', () => {
  it('named: the function\'s parameters schema; the output is that call\'s arguments, finish_reason stop', async () => {
    writes('{"city": "Rome"}');
    const r = await client.chat.completions.create({ model: 'tiny', messages: user, tools: [weather, clock], tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    expect(submitted[0]!.grammar).toEqual({ type: 'json_schema', schema: weather.function.parameters, param: 'tool_choice' });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.choices[0]!.message.content).toBeNull();
    expect(r.choices[0]!.message.tool_calls!.map((t) => t.type === 'function' && [t.function.name, t.function.arguments])).toEqual([['get_weather', '{"city": "Rome"}']]);
  });

  it('required: an array of {name, parameters} (anyOf the tools; maxItems 1 without parallel calls), read as calls, streamed too', async () => {
    writes('[{"name": "get_time", "parameters": {"tz": "UTC"}}, {"name": "get_weather", "parameters": {"city": "Nice"}}]');
    const r = await client.chat.completions.create({ model: 'tiny', messages: user, tools: [weather, clock], tool_choice: 'required' });
    const schema = submitted[0]!.grammar as unknown as { type: string; schema: { type: string; minItems: number; maxItems?: number; items: { anyOf: object[] } } };
    expect(schema).toMatchObject({ type: 'json_schema', param: 'tool_choice', schema: { type: 'array', minItems: 1, items: { anyOf: [expect.any(Object), expect.any(Object)] } } });
    expect(schema.schema.maxItems).toBeUndefined();
    expect(schema.schema.items.anyOf[1]).toEqual({ type: 'object', properties: { name: { type: 'string', enum: ['get_time'] }, parameters: clock.function.parameters }, required: ['name', 'parameters'] });
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    expect(r.choices[0]!.message.tool_calls!.map((t) => t.type === 'function' && [t.function.name, t.function.arguments])).toEqual([
      ['get_time', '{"tz": "UTC"}'],
      ['get_weather', '{"city": "Nice"}'],
    ]);
    const streamed = await client.chat.completions.stream({ model: 'tiny', messages: user, tools: [weather, clock], tool_choice: 'required', parallel_tool_calls: false }).finalChatCompletion();
    expect((submitted[1]!.grammar as unknown as { schema: { maxItems: number } }).schema.maxItems).toBe(1);
    // The fake model ignores the grammar and writes two items: the first call is kept.
    expect(streamed.choices[0]!.message.tool_calls!.map((t) => t.function.name)).toEqual(['get_time']);
  });
});

describe('tool errors -> 400 naming the field', () => {
  const refused = async (body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>, param: string, message: RegExp): Promise<void> => {
    const err = await client.chat.completions.create({ model: 'tiny', messages: user, ...body } as OpenAI.ChatCompletionCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(err, param).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ param });
    expect((err as Error).message).toMatch(message);
  };

  it('tool_choice naming no tool, without tools, or of an unknown form', async () => {
    await refused({ tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice', /"nope", which is not among the tools \(get_weather\)/);
    await refused({ tool_choice: 'required' }, 'tool_choice', /needs tools/);
    await refused({ tools: [weather], tool_choice: 'sometimes' as 'auto' }, 'tool_choice', /send "none", "auto", "required"/);
    await refused({ tools: [weather], tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'auto', tools: [] } } }, 'tool_choice', /allowed_tools is not supported/);
  });

  it('bad tools: a schema that is no object schema, duplicate or bad names, custom tools', async () => {
    const fn = (f: object): OpenAI.ChatCompletionTool => ({ type: 'function', function: f }) as OpenAI.ChatCompletionTool;
    await refused({ tools: [fn({ name: 'f', parameters: { type: 'string' } })] }, 'tools.0.function.parameters', /must be a JSON Schema of type "object"/);
    await refused({ tools: [fn({ name: 'f', parameters: { type: 'object', properties: { a: 3 } } })] }, 'tools.0.function.parameters', /properties\.a must be a schema/);
    await refused({ tools: [weather, weather] }, 'tools.1.function.name', /two tools are named "get_weather"/);
    await refused({ tools: [fn({ name: 'has space' })] }, 'tools.0.function.name', /1 to 64 letters, digits/);
    await refused({ tools: [{ type: 'custom', custom: { name: 'c' } }] }, 'tools.0.type', /only function tools are supported/);
  });

  it('a model whose template has no tool markup: auto needs --tool-call-parser; with it, calls are read', async () => {
    const qwen = await qwenTokenizer();
    const { TextTokenizer } = await import('../tokenizer/TextTokenizer.js');
    const { readFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const json = JSON.parse(await readFile(join(qwenTokenizerDir(), 'tokenizer.json'), 'utf8')) as object;
    const plain = TextTokenizer.fromJson(json, { chat_template: "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}", eos_token: '<|im_end|>' });
    expect(qwen.chatTemplate).not.toBeNull();
    for (const toolCallParser of [undefined, 'hermes'] as const) {
      const grammar = new GrammarService({ script: await agentScript(), modelDir: qwenTokenizerDir(), vocabSize: 151_936, stopTokenIds: [151_645] });
      const other = await startTestServer({ tokenizer: plain, engine: { nextToken: script.nextToken }, serving: { grammar }, ...(toolCallParser ? { toolCallParser } : {}) });
      const c = new OpenAI({ baseURL: `${other.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      try {
        writes(call('get_weather', { city: 'Paris' }));
        const res = c.chat.completions.create({ model: 'tiny', messages: user, tools: [weather] });
        if (toolCallParser) expect((await res).choices[0]!.message.tool_calls![0]).toMatchObject({ function: { name: 'get_weather' } });
        else await expect(res).rejects.toThrow(/tool_choice "auto" needs a tool-call parser.*--tool-call-parser hermes/);
        // required and named need no parser: the grammar forces the output.
        writes('{"city": "Paris"}');
        const named = await c.chat.completions.create({ model: 'tiny', messages: user, tools: [weather], tool_choice: { type: 'function', function: { name: 'get_weather' } } });
        expect(named.choices[0]!.message.tool_calls).toHaveLength(1);
      } finally {
        await other.close();
        await grammar.close();
      }
    }
  });
});
