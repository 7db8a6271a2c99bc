import { describe, expect, it } from 'vitest';
import { RequestLog, type LoggedExchange } from './RequestLog.js';

function exchange(n: number, body = 'x'): LoggedExchange {
  return {
    summary: { startedAtMs: n, method: 'POST', endpoint: '/v1/completions', model: 'tiny', stream: false, status: 200, promptTokens: 1, completionTokens: 2, ttftMs: null, durationMs: 3, finishReason: 'length', backend: 0, error: null },
    requestBody: body,
    requestBytes: body.length,
    responseBody: body,
    responseBytes: body.length,
  };
}

describe('RequestLog', () => {
  it('keeps the newest `capacity` records with consecutive ids, and finds each by id', () => {
    const log = new RequestLog({ capacity: 500 });
    const seen: number[] = [];
    log.onRecord((s) => seen.push(s.id));
    for (let i = 0; i < 1234; i++) log.add(exchange(i, `body ${i}`));
    expect(log.size).toBe(500);
    const ids = log.summaries().map((s) => s.id);
    expect(ids[0]).toBe(734);
    expect(ids.at(-1)).toBe(1233);
    expect(seen).toHaveLength(1234);
    expect(log.get(733)).toBeUndefined();
    expect(log.get(734)).toMatchObject({ id: 734, startedAtMs: 734, requestBody: 'body 734', bodiesKept: true });
    expect(log.get(1233)?.responseBody).toBe('body 1233');
    expect(log.get(5000)).toBeUndefined();
    expect(log.bodyCharsKept).toBe(log.summaries().reduce((n, s) => n + 2 * `body ${s.id}`.length, 0));
  });

  it('drops the oldest bodies past its budget, never a summary nor the newest bodies', () => {
    const log = new RequestLog({ capacity: 10, bodyBudgetChars: 1000 });
    for (let i = 0; i < 4; i++) log.add(exchange(i, 'y'.repeat(200))); // 400 chars each
    expect(log.bodyCharsKept).toBeLessThanOrEqual(1000);
    expect(log.size).toBe(4);
    expect(log.get(0)).toMatchObject({ bodiesKept: false, requestBody: expect.stringMatching(/not kept/), requestBytes: 200 });
    expect(log.get(1)?.bodiesKept).toBe(false);
    expect(log.get(3)?.bodiesKept).toBe(true);
    // One record over the budget alone keeps its bodies.
    log.add(exchange(4, 'z'.repeat(2000)));
    expect(log.get(4)?.bodiesKept).toBe(true);
    expect(log.get(3)?.bodiesKept).toBe(false);
    for (let i = 5; i < 30; i++) log.add(exchange(i));
    expect(log.size).toBe(10);
    expect(log.bodyCharsKept).toBe(20);
  });
});
