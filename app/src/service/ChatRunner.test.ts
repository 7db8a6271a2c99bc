/** ChatRunner over real loopback HTTP against the agent's API on a fake engine (the engine is the faked boundary). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BridgePush, BridgePushChannel } from '@afd/shared';
import { startTestServer, type TestServer } from '../../../agent/src/serving/testing/testServer.js';
import { ChatRunner } from './ChatRunner.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ engine: { maxModelLen: 4096, stepDelayMs: 10 } });
});
afterAll(() => srv.close());

type Pushed = { channel: BridgePushChannel; payload: unknown };

function runner(maxTokens: number): { run: ChatRunner; pushes: Pushed[] } {
  const pushes: Pushed[] = [];
  const run = new ChatRunner({
    chatId: 'c1',
    apiUrl: srv.url,
    model: 'tiny',
    request: { mode: 'chat', messages: [{ role: 'user', content: 'Tell me a long story' }], sampling: { temperature: 0, topP: 1, topK: 0, maxTokens, seed: null } },
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
});
