/**
 * POST /v1/responses through the official `openai` client, on a real rank server (fake
 * engine, the real Qwen3 tokenizer and chat template): non-streamed and streamed text,
 * a function_call / function_call_output round trip rendered into the prompt, and the 400s
 * of what a stateless server cannot do.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qwenTokenizer } from '../../testing/qwenTokenizer.js';
import { startTestServer, type TestServer } from '../../testing/testServer.js';

let srv: TestServer;
let client: OpenAI;
beforeAll(async () => {
  // One step prefills a whole prompt (tools make Qwen3's system prompt long), so plans[k] holds it.
  srv = await startTestServer({ engine: { maxModelLen: 2048 }, serving: { scheduler: { maxNumSeqs: 64, maxNumBatchedTokens: 2048, longPrefillTokenThreshold: 0, dbo: { enabled: false, decodeTokenThreshold: 32, prefillTokenThreshold: 512 } } } });
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'x', maxRetries: 0 });
});
afterAll(() => srv.close());

/** vLLM's extra fields, which the client's types do not have. */
const vllm = (fields: Record<string, unknown>): object => fields;

/** The prompt text of the last request: the first plan after `before` holds its whole prefill. */
async function lastPrompt(before: number): Promise<string> {
  const plan = srv.engine.plans[before]!;
  const tok = await qwenTokenizer();
  return tok.decode([...plan.tokenIds], false);
}

/** The ApiError-like body of a refused request. */
async function refusal(body: Record<string, unknown>): Promise<InstanceType<typeof OpenAI.BadRequestError>> {
  const err = await client.responses.create({ model: 'tiny', input: 'hi', ...body } as never).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OpenAI.BadRequestError);
  return err as InstanceType<typeof OpenAI.BadRequestError>;
}

describe('POST /v1/responses', () => {
  it('answers a Response object; the client computes output_text', async () => {
    const r = await client.responses.create({ model: 'tiny', input: 'Hello', instructions: 'Be brief.', max_output_tokens: 6, temperature: 0, metadata: { run: '1' } });
    expect(r).toMatchObject({ object: 'response', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, model: 'tiny', store: false, instructions: 'Be brief.', metadata: { run: '1' }, temperature: 0 });
    expect(r.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(r.output).toHaveLength(1);
    const msg = r.output[0]!;
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', annotations: [] }] });
    expect(msg.id).toMatch(/^msg_/);
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.output_text).toBe((msg as OpenAI.Responses.ResponseOutputMessage).content.map((c) => (c.type === 'output_text' ? c.text : '')).join(''));
    expect(r.usage).toMatchObject({ output_tokens: 6, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } });
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + 6);
  });

  it('renders instructions and input through the chat template', async () => {
    const before = srv.engine.plans.length;
    await client.responses.create({ model: 'tiny', input: [{ role: 'developer', content: 'Answer in French.' }, { role: 'user', content: [{ type: 'input_text', text: 'Hello there' }] }], instructions: 'Be brief.', max_output_tokens: 2 });
    expect(await lastPrompt(before)).toBe('<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n');
  });

  it('streams named events in order, the deltas adding up to the final text', async () => {
    const stream = await client.responses.create({ model: 'tiny', input: 'Hello', max_output_tokens: 5, stream: true, ...vllm({ seed: 7 }) });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(4, 4 + deltas.length).every((t) => t === 'response.output_text.delta')).toBe(true);
    expect(types.slice(4 + deltas.length)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const text = deltas.map((d) => d.delta).join('');
    const done = events.find((e) => e.type === 'response.output_text.done')!;
    expect(done.text).toBe(text);
    const last = events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent;
    expect(last.response.output).toEqual([expect.objectContaining({ type: 'message', status: 'incomplete', content: [expect.objectContaining({ text })] })]);
    expect(last.response.usage?.output_tokens).toBe(5);
    // The same seed without streaming gives the same text.
    const whole = await client.responses.create({ model: 'tiny', input: 'Hello', max_output_tokens: 5, ...vllm({ seed: 7 }) });
    expect(whole.output_text).toBe(text);
  });

  it('sends the wire format OpenAI sends: event lines, no [DONE]', async () => {
    const res = await fetch(`${srv.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', input: 'Hi', max_output_tokens: 2, stream: true }) });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const blocks = (await res.text()).split('\n\n').filter((b) => b !== '');
    expect(blocks[0]).toMatch(/^event: response\.created\ndata: \{"type":"response\.created","sequence_number":0,/);
    expect(blocks.at(-1)).toMatch(/^event: response\.incomplete\n/);
    expect(blocks.some((b) => b.includes('[DONE]'))).toBe(false);
  });

  it('returns the output text logprobs with include', async () => {
    const r = await client.responses.create({ model: 'tiny', input: 'Hello', max_output_tokens: 3, include: ['message.output_text.logprobs'], top_logprobs: 2 });
    const part = (r.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0] as OpenAI.Responses.ResponseOutputText;
    expect(part.logprobs).toHaveLength(3);
    expect(part.logprobs![0]).toMatchObject({ token: expect.any(String), logprob: expect.any(Number), bytes: expect.any(Array) });
    expect(part.logprobs![0]!.top_logprobs).toHaveLength(2);
  });

  it('a function_call_output round trip reaches the prompt, the call before it; tools reach the template', async () => {
    const before = srv.engine.plans.length;
    const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true }];
    const r = await client.responses.create({
      model: 'tiny',
      tools,
      max_output_tokens: 2,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city": "Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'Sunny, 21 C' },
      ],
    });
    expect(r.tools).toEqual([{ type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: tools[0]!.type === 'function' ? tools[0]!.parameters : null, strict: true }]);
    expect(r.tool_choice).toBe('auto');
    const prompt = await lastPrompt(before);
    expect(prompt).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city"');
    expect(prompt).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n');
    expect(prompt).toContain('<|im_start|>user\n<tool_response>\nSunny, 21 C\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
  });

  it('tool_choice "none" keeps the tools out of the prompt', async () => {
    const before = srv.engine.plans.length;
    await client.responses.create({ model: 'tiny', input: 'hi', max_output_tokens: 1, tool_choice: 'none', tools: [{ type: 'function', name: 'f', parameters: null, strict: null }] });
    expect(await lastPrompt(before)).not.toContain('<tools>');
  });

  it('refuses what a stateless server cannot do, naming the field (OpenAI error body)', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ store: true }, 'store', /stores no responses/],
      [{ previous_response_id: 'resp_123' }, 'previous_response_id', /send the whole conversation in input/],
      [{ background: true }, 'background', /stream instead/],
      [{ tools: [{ type: 'web_search' }] }, 'tools.0.type', /web_search tool runs on OpenAI's platform/],
      [{ temprature: 0.5 }, 'temprature', /Unrecognized request argument supplied: temprature/],
      [{ include: ['reasoning.encrypted_content'] }, 'include.0', /no reasoning items/],
      [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input.0.content.0.type', /text-only/],
      [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input.0.type', /stores no responses/],
      [{ input: [{ type: 'function_call_output', call_id: 'c9', output: 'x' }] }, 'input.0.call_id', /no function_call with call_id "c9"/],
      [{ reasoning: { effort: 'high' } }, 'reasoning', /enable_thinking/],
      [{ tools: [{ type: 'function', name: 'f' }], tool_choice: 'required', text: { format: { type: 'json_object' } } }, 'tool_choice', /text.format would constrain too; send one of them/],
      [{ tool_choice: { type: 'function', name: 'g' } }, 'tool_choice.name', /no function named "g"/],
      [{ top_logprobs: 3 }, 'top_logprobs', /include/],
      [{ truncation: 'auto' }, 'truncation', /not supported/],
    ];
    for (const [body, param, message] of cases) {
      const err = await refusal(body);
      expect(err.error, JSON.stringify(body)).toMatchObject({ type: 'invalid_request_error', param });
      expect(err.message).toMatch(message);
    }
  });

  it('names input and max_output_tokens when the conversation does not fit', async () => {
    const long = await refusal({ max_output_tokens: 5000 });
    expect(long.error).toMatchObject({ param: 'max_output_tokens', code: 'context_length_exceeded' });
    expect(long.message).toMatch(/Reduce the prompt or max_output_tokens/);
    const huge = await refusal({ input: 'word '.repeat(5000) });
    expect(huge.error).toMatchObject({ param: 'input', code: 'context_length_exceeded' });
  });

  it('a generation that fails mid-stream ends with an error event and response.failed', async () => {
    const stream = await client.responses.create({ model: 'tiny', input: 'Hello', max_output_tokens: 50, stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) {
      events.push(e);
      if (e.type === 'response.output_text.delta' && !srv.engine.failNext) srv.engine.failNext = new Error('device lost');
    }
    const [error, failed] = events.slice(-2);
    expect(error).toMatchObject({ type: 'error', code: 'engine_error', message: expect.stringMatching(/device lost/) });
    expect(failed).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { code: 'server_error' }, output: [{ type: 'message', status: 'in_progress' }] } });
    expect(error!.sequence_number + 1).toBe(failed!.sequence_number);
  });

  it('a client that leaves mid-stream aborts the generation and frees its KV blocks', async () => {
    const ctrl = new AbortController();
    const res = await fetch(`${srv.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', input: 'Hello', max_output_tokens: 1500, stream: true }), signal: ctrl.signal });
    const reader = res.body!.getReader();
    await reader.read();
    expect(srv.api.serving.scheduler.blocks.numUsedBlocks).toBeGreaterThan(0);
    ctrl.abort();
    await expect.poll(() => srv.api.serving.scheduler.blocks.numUsedBlocks, { timeout: 15_000, interval: 10 }).toBe(0);
  });

  it('accepts what a client sends back: neutral values and its own output items', async () => {
    const first = await client.responses.create({ model: 'tiny', input: 'Hello', max_output_tokens: 3, store: false, truncation: 'disabled', background: false, service_tier: 'auto', reasoning: {} });
    const next = await client.responses.create({ model: 'tiny', max_output_tokens: 2, input: [{ role: 'user', content: 'Hello' }, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: 'More' }] });
    expect(next.status).toBe('incomplete');
  });
});
