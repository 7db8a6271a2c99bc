import { describe, expect, it } from 'vitest';
import { REQUEST_LOG_CAPACITY, type RequestSummary } from '@afd/shared';
import { RequestLogs } from './RequestLogs.js';

const request = (id: number, startedAtMs = id): RequestSummary => ({ id, startedAtMs, method: 'POST', endpoint: '/v1/completions', model: 'm', stream: false, status: 200, promptTokens: 1, completionTokens: 1, ttftMs: null, durationMs: 1, finishReason: 'stop', backend: 0, error: null });

describe('RequestLogs', () => {
  it('merges agents by arrival, bounds each agent, and replaces an agent on reconnect', () => {
    const logs = new RequestLogs();
    logs.replace('a', [request(0, 10), request(1, 30)]);
    logs.append('b', [request(0, 20)]);
    expect(logs.list().map((r) => `${r.agentId}${r.id}`)).toEqual(['a0', 'b0', 'a1']);
    logs.append('a', Array.from({ length: REQUEST_LOG_CAPACITY }, (_, i) => request(i + 2, 100 + i)));
    expect(logs.list().filter((r) => r.agentId === 'a')).toHaveLength(REQUEST_LOG_CAPACITY);
    expect(logs.list()[0]).toMatchObject({ agentId: 'b', id: 0 });
    // The agent restarted: its log starts again.
    logs.replace('a', [request(0, 5)]);
    expect(logs.list().map((r) => `${r.agentId}${r.id}`)).toEqual(['a0', 'b0']);
    logs.remove('b');
    expect(logs.list()).toHaveLength(1);
  });
});
