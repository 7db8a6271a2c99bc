import { describe, expect, it } from 'vitest';
import {
  bridgeInvokeChannels,
  bridgePushChannels,
  decodeBridgeWireMessage,
  validateBridgePush,
  validateBridgeRequest,
  validateBridgeResponse,
  type BridgeInvokeChannel,
  type BridgePushChannel,
} from './bridge.js';
import { emptyRankStats } from './metrics.js';

const agent = { agentId: 'a1', url: 'ws://127.0.0.1:7070', state: 'connected', message: null, inventory: null, topology: null, latencyMs: 1.5 };

/** A logged request of a front router. */
const summary = { id: 3, startedAtMs: 1, method: 'POST', endpoint: '/v1/completions', model: 'tiny', stream: false, status: 200, promptTokens: 2, completionTokens: 4, ttftMs: null, durationMs: 30, finishReason: 'length', backend: 0, error: null };

const invokes: Record<BridgeInvokeChannel, { request: unknown; response: unknown }> = {
  'agents.add': { request: { url: 'ws://127.0.0.1:7070', token: 't0k' }, response: agent },
  'agents.remove': { request: { agentId: 'a1' }, response: {} },
  'agents.list': { request: {}, response: { agents: [agent] } },
  'topology.validate': { request: { topology: '3A2F' }, response: { valid: false, problems: ['x'], plan: null } },
  'topology.launch': {
    request: { mode: 'colocated', placements: [{ role: 'colocated', rank: 0, agentId: 'a1', backend: 'cpu' }] },
    response: { launchId: 'L1' },
  },
  'topology.stop': { request: {}, response: { stopped: true } },
  'topology.restart': { request: {}, response: { launchId: 'L1' } },
  'topology.setRestartPolicy': { request: { policy: 'on-failure', maxRestarts: 4 }, response: { restart: { policy: 'on-failure', maxRestarts: 4, backoffMs: 1000, maxBackoffMs: 30_000 } } },
  'launch.get': { request: {}, response: { launch: { launchId: 'L1', state: 'running', ranks: [], routerUrl: 'http://127.0.0.1:8000', message: null, cleanup: null } } },
  'model.inspect': {
    request: { agentId: 'a1', dir: '/models/nope' },
    response: { dir: '/models/nope', status: 'refused', reason: '/models/nope does not exist on this host', config: null, weights: { present: false, files: 0, bytes: 0 }, tokenizer: { present: false, chatTemplate: false }, roles: [] },
  },
  'plan.profiles': { request: { agentId: 'a1' }, response: { profiles: [{ name: 'p.json', path: '/h/profiles/p.json', origin: 'home', text: '{}' }], skipped: [] } },
  'logs.get': { request: { agentId: 'a1', role: 'attention', rank: 0, tail: 50 }, response: { lines: [] } },
  'chat.start': { request: { mode: 'chat', messages: [{ role: 'user', content: 'hi' }] }, response: { chatId: 'c1' } },
  'chat.stop': { request: { chatId: 'c1' }, response: { stopped: false } },
  'requests.list': { request: {}, response: { requests: [{ ...summary, agentId: 'a1' }] } },
  'requests.get': { request: { agentId: 'a1', id: 3 }, response: { ...summary, requestBody: '{}', requestBytes: 2, responseBody: '{}', responseBytes: 2, responseText: null, bodiesKept: true } },
  'api.key': { request: {}, response: { held: true, apiKey: null } },
  'metrics.history': {
    request: {},
    response: { launchId: 'L1', history: { tiers: [{ bucketMs: 100, spanMs: 60_000, buckets: [{ tMs: 1000, cols: { tokensPerSecond: [2, 30, 10, 20] } }] }] } },
  },
};

const pushes: Record<BridgePushChannel, unknown> = {
  'agents.state': { agents: [agent] },
  'launch.progress': { launchId: 'L1', state: 'launching', ranks: [], routerUrl: null, message: null, cleanup: null },
  'metrics.snapshot': { agentId: 'a1', launchId: 'L1', snapshot: { timestampMs: 1, stats: emptyRankStats('attention', 0, 1, 1), serving: null } },
  'logs.lines': { agentId: 'a1', role: 'ffn', rank: 0, lines: [{ timestampMs: 1, stream: 'stdout', level: null, text: 'x' }] },
  'chat.delta': { chatId: 'c1', text: 'Hel', stage: 'prefill', timings: { sinceStartMs: 80, sincePrevMs: 80 } },
  'chat.done': { chatId: 'c1', finishReason: 'length', usage: { promptTokens: 3, completionTokens: 16 }, timings: { ttftMs: 80, totalMs: 400, tokensPerSecond: 50 } },
  'chat.accepted': { chatId: 'c1', sinceStartMs: 12 },
  'chat.error': { chatId: 'c1', message: 'no topology is running; launch one first' },
  'requests.logged': { agentId: 'a1', requests: [summary] },
};

describe('bridge channels', () => {
  it('covers every channel in the tests', () => {
    expect(Object.keys(invokes).sort()).toEqual(Object.keys(bridgeInvokeChannels).sort());
    expect(Object.keys(pushes).sort()).toEqual(Object.keys(bridgePushChannels).sort());
  });

  it('validates every request, response and push after a JSON round trip', () => {
    for (const [channel, { request, response }] of Object.entries(invokes)) {
      const req = validateBridgeRequest(channel, JSON.parse(JSON.stringify(request)));
      expect(req.ok, channel).toBe(true);
      if (req.ok) expect(validateBridgeRequest(channel, JSON.parse(JSON.stringify(req.value))).ok).toBe(true);
      expect(validateBridgeResponse(channel as BridgeInvokeChannel, response).ok, channel).toBe(true);
    }
    for (const [channel, payload] of Object.entries(pushes)) expect(validateBridgePush(channel, JSON.parse(JSON.stringify(payload))).ok, channel).toBe(true);
  });

  it('refuses a restart policy change that changes nothing or names an unknown policy', () => {
    const none = validateBridgeRequest('topology.setRestartPolicy', {});
    expect(none.ok).toBe(false);
    if (!none.ok) expect(none.error).toMatch(/give policy \(on-failure or never\), maxRestarts, or both/);
    const bad = validateBridgeRequest('topology.setRestartPolicy', { policy: 'always' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toMatch(/policy/);
    expect(validateBridgeRequest('topology.setRestartPolicy', { maxRestarts: 2 })).toEqual({ ok: true, value: { maxRestarts: 2 } });
  });

  it('carries a chat with structured output, tools, tool calls and tool results', () => {
    const request = {
      mode: 'chat',
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', content: '18 C', tool_call_id: 'call_1' },
      ],
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
    };
    const r = validateBridgeRequest('chat.start', JSON.parse(JSON.stringify(request)));
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value).toMatchObject({ ...request, sampling: { temperature: 0.7 } });
    const delta = { chatId: 'c', text: '', stage: 'decode', toolCalls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"ci' } }], timings: { sinceStartMs: 1, sincePrevMs: 1 } };
    expect(validateBridgePush('chat.delta', delta).ok).toBe(true);
    expect(validateBridgePush('chat.done', { chatId: 'c', finishReason: 'tool_calls', usage: { promptTokens: 3, completionTokens: 9 }, timings: { ttftMs: 1, totalMs: 9, tokensPerSecond: 1 } }).ok).toBe(true);
    const bad: [unknown, RegExp][] = [
      [{ mode: 'chat', messages: [{ role: 'tool', content: 'x' }] }, /tool_call_id/],
      [{ mode: 'chat', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'a b', schema: {} } } }, /response_format.json_schema.name/],
      [{ mode: 'chat', messages: [{ role: 'user', content: 'x' }], tools: [] }, /tools/],
      [{ mode: 'chat', messages: [{ role: 'user', content: 'x' }], tool_choice: 'sometimes' }, /tool_choice/],
    ];
    for (const [payload, why] of bad) {
      const b = validateBridgeRequest('chat.start', payload);
      expect(b.ok).toBe(false);
      if (!b.ok) expect(b.error).toMatch(why);
    }
  });

  it('fills chat sampling defaults', () => {
    const r = bridgeInvokeChannels['chat.start'].request.parse({ mode: 'completion', prompt: 'Once upon' });
    expect(r.sampling).toEqual({ temperature: 0.7, topP: 1, topK: 0, maxTokens: 256, seed: null, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, stop: [], topLogprobs: null });
  });

  it('rejects unknown channels and malformed payloads with the reason', () => {
    const bad: [string, unknown, RegExp][] = [
      ['agents.hack', {}, /unknown bridge channel "agents.hack"/],
      ['agents.add', { url: 'http://x', token: 't' }, /url: must be a ws:\/\/ or wss:\/\/ URL/],
      ['agents.add', { url: 'ws://x' }, /token/],
      ['model.inspect', { agentId: 'a1', dir: 'relative/dir' }, /dir: must be an absolute path on the agent host/],
      ['chat.start', { mode: 'chat', messages: [] }, /messages/],
      ['chat.start', { mode: 'completion', prompt: 'x', sampling: { temperature: -1 } }, /sampling.temperature/],
      ['chat.start', { mode: 'completion', prompt: 'x', sampling: { beams: 4 } }, /sampling.beams: unknown key/],
      ['topology.launch', { mode: 'afd', topology: '1A2F', placements: [] }, /attention-ge-ffn/],
      ['logs.get', { agentId: 'a', role: 'ffn', rank: 0, tail: 0 }, /tail/],
    ];
    for (const [channel, payload, why] of bad) {
      const r = validateBridgeRequest(channel, payload);
      expect(r.ok, channel).toBe(false);
      if (!r.ok) expect(r.error).toMatch(why);
    }
    const push = validateBridgePush('chat.delta', { chatId: 'c', text: 'x', stage: 'middle', timings: { sinceStartMs: 0, sincePrevMs: 0 } });
    expect(push.ok).toBe(false);
    expect(validateBridgePush('chat.unknown', {}).ok).toBe(false);
    expect(validateBridgeResponse('agents.list', { agents: [{ ...agent, state: 'sleepy' }] }).ok).toBe(false);
  });
});

describe('web bridge envelope', () => {
  it('round-trips invoke, result and push frames', () => {
    const frames = [
      { kind: 'invoke', id: '1', channel: 'agents.list', payload: {} },
      { kind: 'result', id: '1', ok: true, payload: { agents: [] } },
      { kind: 'result', id: '2', ok: false, error: 'agent a9 is not known; add it first' },
      { kind: 'push', channel: 'chat.error', payload: { chatId: 'c', message: 'x' } },
    ];
    for (const f of frames) expect(decodeBridgeWireMessage(JSON.stringify(f))).toEqual({ ok: true, value: f });
  });

  it('rejects malformed frames', () => {
    for (const text of ['{', '{"kind":"invoke","channel":"x","payload":{}}', '{"kind":"shout"}', '{"kind":"result","id":"1"}']) {
      expect(decodeBridgeWireMessage(text).ok, text).toBe(false);
    }
  });
});
