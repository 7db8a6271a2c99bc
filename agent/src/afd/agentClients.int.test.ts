/**
 * Agent clients from npm against a real colocated rank (role process, CPU) serving scripted
 * checkpoints (testing/scriptedCheckpoint.ts: the reply is known):
 *
 * - the `ai` SDK's OpenAI-compatible provider completes a two-tool task: step 1 forces
 *   get_weather, step 2 get_time (named tool_choice, so the grammar makes the calls valid
 *   under their zod schemas whatever the model prefers), step 3 answers in text; the local
 *   tools run with the parsed arguments and the final text is the checkpoint's reply;
 * - the official `openai` client's runTools, with two local functions, on a checkpoint that
 *   writes a Qwen3 (hermes) tool call with tool_choice auto: the server parses the call, the
 *   runner runs the function and sends the result back; streamed and not.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, tool } from 'ai';
import { join } from 'node:path';
import OpenAI from 'openai';
import { zodFunction } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { testAddonBuilt } from '../testing/agentBundle.js';
import { RoleProcess } from '../testing/RoleProcess.js';
import { writeScriptedCheckpoint } from '../testing/scriptedCheckpoint.js';
import { useTinyModelSetup } from '../testing/tinyModelSetup.js';

const setup = useTinyModelSetup({ homePrefix: 'afd-agent-clients-int-', arch: 'qwen3_moe' });
/** Tokens all distinct (the scripted checkpoint's rule). */
const ANSWER = 'Paris is sunny at noon.';
/** No newline token: the prompt ends with one (the assistant header), and its successor would start the reply midway. */
const CALL = '<tool_call>{"name": "get_weather","arguments":{"city":"Paris"}}</tool_call>';

async function scriptedRank(name: string, reply: string): Promise<{ rank: RoleProcess; url: string }> {
  const dir = join(setup.home, name);
  writeScriptedCheckpoint(setup.model, dir, reply);
  const rank = await RoleProcess.start({ role: 'colocated', model: dir, home: setup.home });
  return { rank, url: await rank.ready(120_000) };
}

describe.skipIf(!testAddonBuilt())('agent clients from npm against a real rank (CPU)', () => {
  let answer: { rank: RoleProcess; url: string };
  let caller: { rank: RoleProcess; url: string };

  beforeAll(async () => {
    [answer, caller] = await Promise.all([scriptedRank('scripted-answer', ANSWER), scriptedRank('scripted-call', CALL)]);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([answer?.rank.stop(), caller?.rank.stop()]);
  });

  it('the ai SDK completes a two-tool task: get_weather, then get_time, then the answer', { timeout: 120_000 }, async () => {
    const provider = createOpenAICompatible({ name: 'afd', baseURL: `${answer.url}/v1` });
    const ran: { name: string; input: unknown }[] = [];
    const result = await generateText({
      model: provider('m'),
      prompt: 'What is the weather in Paris, and what time is it there?',
      temperature: 0,
      maxOutputTokens: 40,
      tools: {
        get_weather: tool({
          description: 'Current weather in a city',
          inputSchema: z.object({ city: z.string().max(12) }),
          execute: async (input) => (ran.push({ name: 'get_weather', input }), { forecast: 'sunny', celsius: 21 }),
        }),
        get_time: tool({
          description: 'Local time in a time zone',
          inputSchema: z.object({ zone: z.enum(['UTC', 'CET', 'JST']) }),
          execute: async (input) => (ran.push({ name: 'get_time', input }), { time: '12:00' }),
        }),
      },
      prepareStep: ({ stepNumber }) => ({
        toolChoice: stepNumber === 0 ? { type: 'tool', toolName: 'get_weather' } : stepNumber === 1 ? { type: 'tool', toolName: 'get_time' } : 'none',
      }),
      stopWhen: stepCountIs(3),
    });
    expect(ran.map((r) => r.name)).toEqual(['get_weather', 'get_time']);
    expect(z.object({ city: z.string().max(12) }).safeParse(ran[0]!.input).success).toBe(true);
    expect(['UTC', 'CET', 'JST']).toContain((ran[1]!.input as { zone: string }).zone);
    expect(result.steps).toHaveLength(3);
    expect(result.steps[0]!.toolResults[0]).toMatchObject({ toolName: 'get_weather', output: { forecast: 'sunny', celsius: 21 } });
    expect(result.steps[1]!.toolResults[0]).toMatchObject({ toolName: 'get_time', output: { time: '12:00' } });
    expect(result.text).toBe(ANSWER);
    expect(result.finishReason).toBe('stop');
  });

  for (const stream of [false, true]) {
    it(`openai runTools (${stream ? 'streamed' : 'not streamed'}): the parsed Qwen3 tool call runs the local function and its result goes back`, { timeout: 120_000 }, async () => {
      const client = new OpenAI({ baseURL: `${caller.url}/v1`, apiKey: 'none', maxRetries: 0 });
      const ran: unknown[] = [];
      const tools = [
        zodFunction({ name: 'get_weather', parameters: z.object({ city: z.string() }), function: async (a) => (ran.push(a), { forecast: 'sunny' }), description: 'Weather in a city' }),
        zodFunction({ name: 'get_time', parameters: z.object({ zone: z.string() }), function: async () => ({ time: '12:00' }), description: 'Time in a zone' }),
      ];
      const body = { model: 'm', messages: [{ role: 'user' as const, content: 'Weather in Paris?' }], tools, temperature: 0, max_tokens: 40 };
      const runner = stream ? client.chat.completions.runTools({ ...body, stream: true }, { maxChatCompletions: 2 }) : client.chat.completions.runTools(body, { maxChatCompletions: 2 });
      await runner.done();
      // Two completions, each a parsed call the runner executed with the model's arguments.
      expect(ran).toEqual([{ city: 'Paris' }, { city: 'Paris' }]);
      const sent = runner.messages;
      const toolMessages = sent.filter((m) => m.role === 'tool');
      expect(toolMessages).toHaveLength(2);
      expect(JSON.parse(toolMessages[0]!.content as string)).toEqual({ forecast: 'sunny' });
      const last = await runner.finalChatCompletion();
      expect(last.choices[0]!.finish_reason).toBe('tool_calls');
      expect(last.choices[0]!.message.content).toBeNull();
      const call = last.choices[0]!.message.tool_calls![0]!;
      expect(call.type === 'function' && call.function.name).toBe('get_weather');
      expect(call.id).toMatch(/^[A-Za-z0-9_-]+$/);
    });
  }
});
