import { describe, expect, it } from 'vitest';
import {
  AGENT_MAX_MESSAGE_BYTES,
  agentMethods,
  agentRequestSchema,
  decodeAgentMessage,
  decodeAgentRequest,
  parseAgentResult,
  requestIdOf,
  type AgentEvent,
  type AgentMethod,
  type AgentRequestInput,
} from './agent.js';
import { emptyRankStats } from './metrics.js';
import type { Inventory } from './inventory.js';

const inventory: Inventory = {
  hostname: 'gpu-1',
  platform: 'linux',
  arch: 'x64',
  cpu: { model: 'AMD EPYC', cores: 16 },
  memory: { totalBytes: 128e9, freeBytes: 100e9 },
  devices: [
    { kind: 'cpu', index: 0, name: 'AMD EPYC', cores: 16, totalMemoryBytes: 128e9, freeMemoryBytes: 100e9 },
    { kind: 'cuda', index: 0, name: 'NVIDIA H200', totalMemoryBytes: 141e9, freeMemoryBytes: 140e9, computeCapability: '9.0', multiProcessors: 132, mps: { available: true, reason: null } },
  ],
  backends: ['cpu', 'cuda'],
  versions: { agent: '0.1.0', node: '20.19.0', addon: '0.1.0', addonVariant: 'cuda', cudaRuntime: '13.0', cudaDriver: '13.0' },
  libraries: {
    cublas: { loaded: true, soname: 'libcublas.so.13', version: '13.0.0', error: '' },
    cublasLt: { loaded: true, soname: 'libcublasLt.so.13', version: '13.0.0', error: '' },
    nccl: { loaded: false, soname: '', version: '', error: 'libnccl.so.2: cannot open shared object file' },
  },
  cudaError: '',
  models: [{ name: 'tiny-qwen3-moe', dir: '/root/.afd/models/tiny-qwen3-moe' }],
  advertiseHost: 'gpu-1.example',
  defaultModel: { kind: 'tiny', name: 'tiny-qwen3-moe', dir: '/root/.afd/models/tiny-qwen3-moe', description: null },
  mps: { controlProgram: '/usr/bin/nvidia-cuda-mps-control', daemon: null, unavailable: null },
};

const requests: AgentRequestInput[] = [
  { id: '1', method: 'ping', params: {} },
  { id: '2', method: 'inventory.get', params: {} },
  {
    id: '3',
    method: 'topology.launch',
    params: {
      launchId: 'L1',
      agentId: 'a',
      spec: {
        mode: 'afd',
        topology: '2A1F',
        placements: [
          { role: 'ffn', rank: 0, agentId: 'a', backend: 'cpu' },
          { role: 'attention', rank: 0, agentId: 'a', backend: 'cpu' },
          { role: 'attention', rank: 1, agentId: 'b', backend: 'cuda', deviceIndex: 1 },
        ],
      },
    },
  },
  { id: '4', method: 'topology.stop', params: {} },
  { id: '5', method: 'topology.restart', params: {} },
  { id: '6', method: 'logs.get', params: { role: 'ffn', rank: 0 } },
  { id: '7', method: 'logs.subscribe', params: {} },
  { id: '8', method: 'logs.unsubscribe', params: {} },
  { id: '9', method: 'metrics.subscribe', params: { intervalMs: 200 } },
  { id: '10', method: 'metrics.unsubscribe', params: {} },
  { id: '11', method: 'model.inspect', params: { dir: '/models/Qwen3-30B-A3B' } },
  { id: '12', method: 'requests.subscribe', params: {} },
  { id: '13', method: 'requests.unsubscribe', params: {} },
  { id: '14', method: 'requests.get', params: { id: 3 } },
  { id: '15', method: 'topology.setRestartPolicy', params: { launchId: 'L1', policy: 'never' } },
  { id: '16', method: 'plan.profiles', params: {} },
];

describe('agent requests', () => {
  it('round-trips every method through a JSON frame, filling defaults', () => {
    const methods = new Set<string>();
    for (const req of requests) {
      const decoded = decodeAgentRequest(JSON.stringify(req));
      expect(decoded.ok, req.method).toBe(true);
      if (!decoded.ok) continue;
      methods.add(decoded.value.method);
      expect(decoded.value.id).toBe(req.id);
      expect(decodeAgentRequest(JSON.stringify(decoded.value))).toEqual(decoded);
      if (decoded.value.method === 'logs.get') expect(decoded.value.params.tail).toBe(200);
      if (decoded.value.method === 'topology.stop') expect(decoded.value.params.graceMs).toBe(10_000);
    }
    expect([...methods].sort()).toEqual(Object.keys(agentMethods).sort());
  });

  it('rejects malformed requests with the reason', () => {
    const cases: [string, RegExp][] = [
      ['not json', /not valid JSON/],
      ['{"id":"1","method":"reboot","params":{}}', /method/],
      ['{"method":"ping","params":{}}', /id/],
      ['{"id":"","method":"ping","params":{}}', /id/],
      ['{"id":"1","method":"ping"}', /params/],
      ['{"id":"1","method":"logs.get","params":{"role":"ffn","rank":-1}}', /params\.rank/],
      ['{"id":"1","method":"logs.get","params":{"role":"ffn","rank":0,"tail":0}}', /params\.tail/],
      ['{"id":"1","method":"metrics.subscribe","params":{"intervalMs":1}}', /params\.intervalMs/],
      ['{"id":"1","method":"topology.setRestartPolicy","params":{"launchId":"L1"}}', /give policy \(on-failure or never\), maxRestarts, or both/],
      ['{"id":"1","method":"topology.setRestartPolicy","params":{"launchId":"L1","policy":"always"}}', /params\.policy/],
      ['{"id":"1","method":"topology.setRestartPolicy","params":{"launchId":"L1","maxRestarts":-1}}', /params\.maxRestarts/],
      ['{"id":"1","method":"topology.setRestartPolicy","params":{"policy":"never"}}', /params\.launchId/],
      ['{"id":"1","method":"model.inspect","params":{"dir":"models/x"}}', /params\.dir: must be an absolute path on the agent host/],
      ['{"id":"1","method":"topology.launch","params":{"launchId":"L","agentId":"a","spec":{"mode":"afd","topology":"1A2F","placements":[]}}}', /attention-ge-ffn/],
    ];
    for (const [text, why] of cases) {
      const r = decodeAgentRequest(text);
      expect(r.ok, text).toBe(false);
      if (!r.ok) expect(r.error).toMatch(why);
    }
  });

  it('rejects frames over the size limit before parsing', () => {
    const big = JSON.stringify({ id: '1', method: 'ping', params: {}, pad: 'x'.repeat(AGENT_MAX_MESSAGE_BYTES) });
    const r = decodeAgentRequest(big);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/over the 8388608-byte limit/);
  });

  it('reads the request id of a bad frame when it can', () => {
    expect(requestIdOf('{"id":"7","method":"nope"}')).toBe('7');
    expect(requestIdOf('{"id":7}')).toBeNull();
    expect(requestIdOf('garbage')).toBeNull();
    expect(agentRequestSchema.safeParse({ id: '1', method: 'ping', params: {} }).success).toBe(true);
  });
});

/** A logged request (the front router's request log). */
const summary = { id: 3, startedAtMs: 1, method: 'POST', endpoint: '/v1/chat/completions', model: 'tiny', stream: true, status: 200, promptTokens: 5, completionTokens: 8, ttftMs: 12.5, durationMs: 40, finishReason: 'length', backend: 0, error: null };

describe('agent messages', () => {
  const events: AgentEvent[] = [
    { type: 'hello', protocolVersion: 1, agentVersion: '0.1.0', hostname: 'gpu-1' },
    { type: 'rank.progress', launchId: 'L1', role: 'attention', rank: 0, phase: 'loading', bytesDone: 5, bytesTotal: 10 },
    { type: 'rank.ready', launchId: 'L1', role: 'ffn', rank: 1, apiUrl: 'http://127.0.0.1:9001' },
    { type: 'rank.failed', launchId: 'L1', role: 'ffn', rank: 0, exitCode: 1, signal: null, message: 'CUDA out of memory', lastLogLines: ['a', 'b'] },
    { type: 'rank.exited', launchId: 'L1', role: 'attention', rank: 0, exitCode: null, signal: 'SIGKILL' },
    { type: 'topology.state', state: { launchId: null, state: 'idle', spec: null, ranks: [], routerUrl: null, gpus: [] } },
    { type: 'log.lines', role: 'ffn', rank: 0, lines: [{ timestampMs: 1, stream: 'stderr', level: 'info', text: 'loop started' }] },
    { type: 'metrics.snapshot', launchId: 'L1', snapshot: { timestampMs: 2, stats: emptyRankStats('ffn', 0, 1, 1), serving: null } },
    { type: 'requests.logged', requests: [summary] },
    { type: 'error', requestId: null, message: 'malformed agent request: ...' },
  ];

  it('round-trips every event, and both response kinds', () => {
    for (const e of events) expect(decodeAgentMessage(JSON.stringify(e))).toEqual({ ok: true, value: e });
    const ok = { type: 'response', id: '2', ok: true, result: inventory };
    expect(decodeAgentMessage(JSON.stringify(ok))).toEqual({ ok: true, value: ok });
    const err = { type: 'response', id: '3', ok: false, error: { code: 'busy', message: 'a launch is running; stop it first' } };
    expect(decodeAgentMessage(JSON.stringify(err))).toEqual({ ok: true, value: err });
  });

  it('validates results per method', () => {
    expect(parseAgentResult('inventory.get', JSON.parse(JSON.stringify(inventory)))).toEqual({ ok: true, value: inventory });
    const results: Record<AgentMethod, unknown> = {
      ping: { timeMs: 5 },
      'inventory.get': inventory,
      'topology.launch': { launchId: 'L1', numRanks: 3 },
      'topology.stop': { stopped: true },
      'topology.restart': { launchId: 'L1' },
      'topology.setRestartPolicy': { launchId: 'L1', restart: { policy: 'never', maxRestarts: 3, backoffMs: 1000, maxBackoffMs: 30_000 } },
      'logs.get': { lines: [] },
      'logs.subscribe': {},
      'logs.unsubscribe': {},
      'metrics.subscribe': { intervalMs: 100 },
      'metrics.unsubscribe': {},
      'requests.subscribe': { requests: [summary] },
      'requests.unsubscribe': {},
      'requests.get': { ...summary, requestBody: '{"model":"tiny"}', requestBytes: 16, responseBody: 'data: {}\n\n', responseBytes: 10, responseText: 'Hi', bodiesKept: true },
      'plan.profiles': { profiles: [{ name: 'p.json', path: '/h/profiles/p.json', origin: 'repo', text: '{}' }], skipped: [{ path: '/h/profiles/big.json', reason: 'too big' }] },
      'model.inspect': {
        dir: '/m',
        status: 'config-only',
        reason: 'config only: needs load format dummy',
        config: { architecture: 'Qwen3MoeForCausalLM', family: 'qwen3_moe', numLayers: 48, hiddenSize: 2048, numExperts: 128, numExpertsPerTok: 8, vocabSize: 151936, maxPositionEmbeddings: 40960, parameters: 30e9, roleBytes: { colocated: 60e9, attention: 3e9, ffn: 57e9 } },
        weights: { present: false, files: 0, bytes: 0 },
        tokenizer: { present: true, chatTemplate: true },
        roles: ['colocated', 'attention', 'ffn'],
      },
    };
    for (const [method, result] of Object.entries(results)) expect(parseAgentResult(method as AgentMethod, result).ok, method).toBe(true);
    const bad = parseAgentResult('inventory.get', { ...inventory, devices: [] });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toMatch(/inventory.get result: devices/);
    expect(parseAgentResult('topology.launch', { launchId: 'L1', numRanks: -1 }).ok).toBe(false);
  });

  it('rejects malformed agent messages', () => {
    for (const bad of [
      { type: 'response', id: '1', ok: false },
      { type: 'response', id: '1', ok: false, error: { code: 'teapot', message: 'x' } },
      { type: 'rank.failed', launchId: 'L', role: 'ffn', rank: 0, exitCode: 1, signal: null, message: 'x' },
      { type: 'rank.progress', launchId: 'L', role: 'ffn', rank: 0, phase: 'loading', bytesDone: 1 },
      { type: 'metrics.snapshot', launchId: 'L', snapshot: { timestampMs: 1, stats: { role: 'ffn' }, serving: null } },
      { type: 'gossip' },
      'hello',
    ]) {
      expect(decodeAgentMessage(JSON.stringify(bad)).ok, JSON.stringify(bad)).toBe(false);
    }
  });
});
