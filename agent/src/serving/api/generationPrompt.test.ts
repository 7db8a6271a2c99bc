/**
 * add_generation_prompt and continue_final_message on /v1/chat/completions: vLLM's rule
 * (both true is a 400), continuing only an assistant message, and over loopback HTTP (fake
 * engine, the real Qwen3 tokenizer) the prompt a continued reply gets and what comes back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOf } from '../testing/httpBodies.js';
import { qwenTokenizer } from '../testing/qwenTokenizer.js';
import { startTestServer, type TestServer } from '../testing/testServer.js';
import { ApiError } from './ApiError.js';
import { chatGenerationPromptOf, generationPromptOf } from './generationPrompt.js';

const errorOf = (f: () => unknown): ApiError => {
  try {
    f();
  } catch (err) {
    return err as ApiError;
  }
  throw new Error('expected a throw');
};

describe('generationPromptOf', () => {
  it("vLLM's defaults: the assistant turn start, no continuation", () => {
    expect(generationPromptOf({})).toEqual({ addGenerationPrompt: true, continueFinalMessage: false });
    expect(generationPromptOf({ add_generation_prompt: null, continue_final_message: null })).toEqual({ addGenerationPrompt: true, continueFinalMessage: false });
    expect(generationPromptOf({ add_generation_prompt: false })).toEqual({ addGenerationPrompt: false, continueFinalMessage: false });
    expect(generationPromptOf({ add_generation_prompt: false, continue_final_message: true })).toEqual({ addGenerationPrompt: false, continueFinalMessage: true });
  });

  it('both true is a 400 naming both, also when add_generation_prompt is left to its default', () => {
    const explicit = errorOf(() => generationPromptOf({ add_generation_prompt: true, continue_final_message: true }));
    expect(explicit).toBeInstanceOf(ApiError);
    expect(explicit).toMatchObject({ status: 400, param: 'continue_final_message' });
    expect(explicit.message).toMatch(/^Cannot set both `continue_final_message` and `add_generation_prompt` to True\. /);
    expect(errorOf(() => generationPromptOf({ continue_final_message: true })).message).toMatch(/defaults to true.*add_generation_prompt: false/);
  });

  it('the chat route continues only a final assistant message', () => {
    const user = [{ role: 'user' }];
    expect(chatGenerationPromptOf({ messages: [...user, { role: 'assistant' }], add_generation_prompt: false, continue_final_message: true }).continueFinalMessage).toBe(true);
    const err = errorOf(() => chatGenerationPromptOf({ messages: user, add_generation_prompt: false, continue_final_message: true }));
    expect(err).toMatchObject({ status: 400, param: 'continue_final_message' });
    expect(err.message).toMatch(/the last message is a user message/);
    expect(chatGenerationPromptOf({ messages: user, add_generation_prompt: false })).toEqual({ addGenerationPrompt: false, continueFinalMessage: false });
  });
});

describe('continue_final_message over HTTP (fake engine)', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer();
  });
  afterAll(() => srv.close());
  const post = async (body: object): Promise<{ status: number; body: ReturnType<typeof JSON.parse> }> => {
    const res = await fetch(`${srv.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', max_tokens: 3, ...body }) });
    return { status: res.status, body: await jsonOf(res) };
  };
  const cut = [
    { role: 'user', content: 'Tell me a story' },
    { role: 'assistant', content: 'Once upon a' },
  ];

  it('the prompt ends inside the final assistant message (no end of turn) and the reply is only the new text', async () => {
    const tok = await qwenTokenizer();
    const r = await post({ messages: cut, add_generation_prompt: false, continue_final_message: true, return_token_ids: true });
    expect(r.status).toBe(200);
    const prompt = r.body.prompt_token_ids as number[];
    expect(prompt).toEqual(tok.encodeChat(cut, { addGenerationPrompt: false, continueFinalMessage: true }));
    expect(tok.decode(prompt, false)).toMatch(/<\|im_start\|>assistant\n(<think>\n\n<\/think>\n\n)?Once upon a$/);
    const choice = r.body.choices[0];
    expect(choice.message.role).toBe('assistant');
    expect(choice.message.content).toBe(tok.decode(choice.token_ids, true));
    expect(choice.message.content).not.toContain('Once upon a');
    // Without continuing, the same messages end with the end of turn.
    const closed = await post({ messages: cut, add_generation_prompt: false, return_token_ids: true });
    expect(tok.decode(closed.body.prompt_token_ids, false)).toMatch(/Once upon a<\|im_end\|>\n$/);
  });

  it('echo gives the continued message back in front of the new text (vLLM test_chat_echo)', async () => {
    const r = await post({ messages: cut, add_generation_prompt: false, continue_final_message: true, echo: true });
    expect(r.status).toBe(200);
    expect(r.body.choices[0].message.content).toMatch(/^Once upon a./s);
  });

  it('both true, or a final user message, is a 400 naming continue_final_message', async () => {
    for (const body of [{ messages: cut, continue_final_message: true }, { messages: cut, add_generation_prompt: true, continue_final_message: true }, { messages: cut.slice(0, 1), add_generation_prompt: false, continue_final_message: true }]) {
      const r = await post(body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ param: 'continue_final_message', type: 'invalid_request_error' });
    }
  });

  it('continue_final_message false is the default rendering', async () => {
    const a = await post({ messages: cut.slice(0, 1), continue_final_message: false, return_token_ids: true });
    const b = await post({ messages: cut.slice(0, 1), return_token_ids: true });
    expect(a.status).toBe(200);
    expect(a.body.prompt_token_ids).toEqual(b.body.prompt_token_ids);
  });
});
