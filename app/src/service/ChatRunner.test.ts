/** ChatRunner over real loopback HTTP against the agent's API on a fake engine (the engine is the faked boundary). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgePush, BridgePushChannel, BridgeRequest } from '@afd/shared';
import { startTestServer, type TestServer } from '../../../agent/src/serving/testing/testServer.js';
import { ChatRunner } from './ChatRunner.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ engine: { maxModelLen: 4096, stepDelayMs: 10 } });
});
afterAll(() => srv.close());

type Pushed = { channel: BridgePushChannel; payload: unknown };

const sampling = { temperature: 0, topP: 1, topK: 0, maxTokens: 5, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null };

function runner(maxTokens: number, request: BridgeRequest<'chat.start'> = { mode: 'chat', messages: [{ role: 'user', content: 'Tell me a long story' }], sampling: { ...sampling, maxTokens } }): { run: ChatRunner; pushes: Pushed[] } {
  const pushes: Pushed[] = [];
  const run = new ChatRunner({
    chatId: 'c1',
    apiUrl: srv.url,
    model: 'tiny',
    request,
    push: (channel, payload) => void pushes.push({ channel, payload }),
  });
  return { run, pushes };
}

const doneOf = (pushes: Pushed[]): BridgePush<'chat.done'> => pushes.find((p) => p.channel === 'chat.done')!.payload as BridgePush<'chat.done'>;

describe('ChatRunner', () => {
  it('reports a stopped reply as aborted, with the prompt count and the tokens produced so far', async () => {
    const { run, pushes } = runner(2000);
    const done = run.run();
    const t0 = Date.now();
    while (pushes.filter((p) => p.channel === 'chat.delta').length < 3 && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 5));
    run.stop();
    await done;
    const d = doneOf(pushes);
    expect(d.finishReason).toBe('aborted');
    expect(d.usage.promptTokens).toBeGreaterThan(0);
    expect(d.usage.completionTokens).toBeGreaterThanOrEqual(3);
    expect(d.usage.completionTokens).toBeLessThan(2000);
    expect(pushes.some((p) => p.channel === 'chat.error')).toBe(false);
  });

  it('reports a reply that ran to max tokens as length, with full usage', async () => {
    const { run, pushes } = runner(5);
    await run.run();
    expect(doneOf(pushes)).toMatchObject({ finishReason: 'length', usage: { completionTokens: 5 } });
    expect(doneOf(pushes).usage.promptTokens).toBeGreaterThan(0);
  });

  it('the token view: each delta carries its tokens with logprobs and top alternatives, whose text is the reply (chat and raw completion)', async () => {
    const requests: BridgeRequest<'chat.start'>[] = [
      { mode: 'chat', messages: [{ role: 'user', content: 'Tell me a story' }], sampling: { ...sampling, topLogprobs: 3 } },
      { mode: 'completion', prompt: 'Once upon', sampling: { ...sampling, topLogprobs: 3 } },
    ];
    for (const request of requests) {
      const { run, pushes } = runner(5, request);
      await run.run();
      const deltas = pushes.filter((p) => p.channel === 'chat.delta').map((p) => p.payload as BridgePush<'chat.delta'>);
      const tokens = deltas.flatMap((d) => d.tokens ?? []);
      expect(tokens, request.mode).toHaveLength(5);
      expect(tokens.map((t) => t.token).join('')).toBe(deltas.map((d) => d.text).join(''));
      for (const t of tokens) {
        expect(t.logprob).toBeLessThanOrEqual(0);
        expect(t.top).toHaveLength(3);
        expect(t.top[0]!.logprob).toBeGreaterThanOrEqual(t.top[2]!.logprob);
      }
    }
  });

  it('a chat continuation goes out with continue_final_message: the reply is only the new text', async () => {
    const messages = [{ role: 'user' as const, content: 'Tell me a story' }, { role: 'assistant' as const, content: 'Once upon a' }];
    const { run, pushes } = runner(3, { mode: 'chat', messages, sampling: { ...sampling, maxTokens: 3 }, continue_final_message: true, add_generation_prompt: false });
    await run.run();
    expect(doneOf(pushes)).toMatchObject({ finishReason: 'length', usage: { completionTokens: 3 } });
    expect(pushes.some((p) => p.channel === 'chat.error')).toBe(false);
    const text = pushes.filter((p) => p.channel === 'chat.delta').map((p) => (p.payload as BridgePush<'chat.delta'>).text).join('');
    expect(text).not.toContain('Once upon a');
  });
});
