import { describe, expect, it } from 'vitest';
import { REQUEST_LOG_CAPACITY, type RequestSummary } from '@afd/shared';
import { createFakeBridge } from '../testing/fakeBridge.js';
import { createRequestsStore } from './requestsStore.js';

const request = (id: number, startedAtMs = id * 10): RequestSummary => ({ id, startedAtMs, method: 'POST', endpoint: '/v1/chat/completions', model: 'tiny', stream: false, status: 200, promptTokens: 3, completionTokens: 5, ttftMs: null, durationMs: 4, finishReason: 'length', backend: 0, error: null });

describe('requests store', () => {
  it('loads the log, merges pushed requests by arrival, keeps the newest 500, and starts an agent over on replace', async () => {
    const bridge = createFakeBridge();
    bridge.handle('requests.list', () => ({ requests: [{ ...request(0), agentId: 'a' }, { ...request(1), agentId: 'a' }] }));
    const store = createRequestsStore(bridge);
    bridge.emit('requests.logged', { agentId: 'b', requests: [request(0, 5)], replace: false });
    await store.getState().load();
    const keys = (): string[] => store.getState().rows.map((r) => `${r.agentId}${r.id}`);
    expect(store.getState().loaded).toBe(true);
    expect(keys()).toEqual(['a0', 'b0', 'a1']);
    bridge.emit('requests.logged', { agentId: 'a', requests: [request(1), request(2)], replace: false });
    expect(keys()).toEqual(['a0', 'b0', 'a1', 'a2']);
    bridge.emit('requests.logged', { agentId: 'a', requests: Array.from({ length: REQUEST_LOG_CAPACITY }, (_, i) => request(i + 3)), replace: false });
    expect(store.getState().rows).toHaveLength(REQUEST_LOG_CAPACITY);
    expect(keys().at(-1)).toBe(`a${REQUEST_LOG_CAPACITY + 2}`);
    bridge.emit('requests.logged', { agentId: 'a', requests: [request(0, 1)], replace: true });
    expect(keys()).toEqual(['a0']);
  });

  it('opens a request with its bodies, closes it on a second click, and says why it could not', async () => {
    const bridge = createFakeBridge();
    const detail = { ...request(7), requestBody: '{"model":"tiny"}', requestBytes: 16, responseBody: '{}', responseBytes: 2, responseText: null, bodiesKept: true };
    bridge.handle('requests.get', (r) => {
      if ((r as { id: number }).id !== 7) throw new Error('request 8 is not in this agent\'s request log');
      return detail;
    });
    const store = createRequestsStore(bridge);
    await store.getState().open({ agentId: 'a', id: 7 });
    expect(store.getState()).toMatchObject({ opened: 'a/7', detail, detailError: null });
    await store.getState().open({ agentId: 'a', id: 7 });
    expect(store.getState()).toMatchObject({ opened: null, detail: null });
    await store.getState().open({ agentId: 'a', id: 8 });
    expect(store.getState().detailError).toMatch(/cannot load request 8 of agent a: request 8 is not in/);
  });
});
