/** runRole in-process with a fake engine opener: event order, HTTP, readiness, stop. */
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { parseRoleEventLine, type RoleEvent } from '@afd/shared';
import { createLogger } from '../util/logger.js';
import { FakeEngine } from '../serving/testing/FakeEngine.js';
import { qwenTokenizerDir } from '../serving/testing/qwenTokenizer.js';
import { unavailableFfnServer } from './ffnServer.js';
import { RoleEvents } from './RoleEvents.js';
import { resolveRoleConfig } from './roleConfig.js';
import { prefixCachingOf } from './prefixCaching.js';
import { runRole, servingOptionsOf } from './runRole.js';

function recorder(): { events: RoleEvents; seen: RoleEvent[] } {
  const seen: RoleEvent[] = [];
  const events = new RoleEvents((line) => {
    const parsed = parseRoleEventLine(line.trimEnd());
    if (!parsed.ok) throw new Error(parsed.error);
    seen.push(parsed.event);
  });
  return { events, seen };
}

describe('runRole', () => {
  it('colocated: progress, listening, warmup, ready; serves; stops with "stopped"', async () => {
    const { events, seen } = recorder();
    const config = resolveRoleConfig('colocated', { model: qwenTokenizerDir(), apiPort: '0', servedModelName: 'tiny' });
    let peer: ((p: string | null) => void) | undefined;
    const role = await runRole(config, {
      openEngine: async (req) => {
        req.onProgress('loading', 10, 10);
        peer = req.onPeerState;
        return { engine: new FakeEngine(), description: 'fake' };
      },
      openFfnServer: unavailableFfnServer,
      events,
      log: createLogger('test', 'silent'),
      version: 't',
    });
    expect(seen.map((e) => e.type)).toEqual(['progress', 'listening', 'progress', 'progress', 'progress', 'ready']);
    expect(seen[1]).toEqual({ type: 'listening', apiUrl: role.apiUrl });
    expect(seen.filter((e) => e.type === 'progress').map((e) => (e.type === 'progress' ? e.phase : ''))).toEqual(['loading', 'loading', 'warmup', 'warmup']);
    expect((await fetch(`${role.apiUrl}/health`)).status).toBe(200);
    const res = await fetch(`${role.apiUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 3 }) });
    expect(res.status).toBe(200);
    peer!('lost ffn 0 at 127.0.0.1:29500');
    const h = await fetch(`${role.apiUrl}/health`);
    expect(h.status).toBe(503);
    expect(JSON.parse(await h.text()).reason).toMatch(/lost ffn 0/);
    await role.stop();
    expect(seen.at(-1)).toEqual({ type: 'stopped' });
    await expect(fetch(`${role.apiUrl}/health`)).rejects.toThrow();
  });

  it('fails with a clear error when the engine cannot load, and releases the port', async () => {
    const { events, seen } = recorder();
    const config = resolveRoleConfig('attention', { model: qwenTokenizerDir(), apiPort: '0', topology: '2A1F', rank: '1' });
    await expect(
      runRole(config, {
        openEngine: async () => {
          throw new Error('cannot reach ffn 0 at 127.0.0.1:29500');
        },
        openFfnServer: unavailableFfnServer,
        events,
        log: createLogger('test', 'silent'),
        version: 't',
      }),
    ).rejects.toThrow(/cannot reach ffn 0/);
    const listening = seen.find((e) => e.type === 'listening');
    expect(listening).toBeDefined();
    if (listening?.type === 'listening') await expect(fetch(`${listening.apiUrl}/health`)).rejects.toThrow();
  });

  it('a model with recurrent-state slots: prefix caching off by default with one log line saying why; --enable-prefix-caching fails naming the flag', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const start = (flags: Record<string, unknown>) =>
      runRole(resolveRoleConfig('colocated', { model: qwenTokenizerDir(), apiPort: '0', maxNumSeqs: '8', ...flags }), {
        openEngine: async () => ({ engine: new FakeEngine({ numStateSlots: 8 }), description: 'fake gdn' }),
        openFfnServer: unavailableFfnServer,
        events: recorder().events,
        log,
        version: 't',
      });
    const role = await start({});
    const notes = lines.map((l) => JSON.parse(l).msg as string).filter((m) => m.startsWith('prefix caching off'));
    expect(notes).toEqual(['prefix caching off: its linear-attention (gdn) layers keep per-sequence recurrent state that KV blocks do not hold']);
    const metrics = await (await fetch(`${role.apiUrl}/metrics`)).text();
    expect(metrics).toContain('enable_prefix_caching="False"');
    await role.stop();
    await expect(start({ enablePrefixCaching: true })).rejects.toThrow(/^--enable-prefix-caching cannot be used with this model: its linear-attention \(gdn\) layers keep per-sequence recurrent state/);
  });

  it('prefixCachingOf: the flag, or on by default, for a model without recurrent state; off (and the flag an error) with it', () => {
    expect(prefixCachingOf(null, {})).toEqual({ enabled: true, note: null });
    expect(prefixCachingOf(false, { numStateSlots: 0 })).toEqual({ enabled: false, note: null });
    expect(prefixCachingOf(true, { numStateSlots: 0 })).toEqual({ enabled: true, note: null });
    expect(prefixCachingOf(null, { numStateSlots: 64 })).toEqual({ enabled: false, note: expect.stringMatching(/^prefix caching off: its linear-attention/) });
    expect(prefixCachingOf(false, { numStateSlots: 64 })).toEqual({ enabled: false, note: null });
    expect(() => prefixCachingOf(true, { numStateSlots: 64 })).toThrow(/--enable-prefix-caching cannot be used with this model/);
    const config = resolveRoleConfig('colocated', {});
    expect(servingOptionsOf(config).prefixCaching).toBe(true);
    expect(servingOptionsOf(config, { numStateSlots: 64 }).prefixCaching).toBe(false);
  });

  it('validates the rank config through the shared schema', () => {
    expect(() => resolveRoleConfig('router', {})).toThrow(/unknown role "router"/);
    expect(() => resolveRoleConfig('attention', { topology: '1A2F' })).toThrow(/topology/);
    expect(() => resolveRoleConfig('attention', { topology: '2A1F', rank: '2' })).toThrow(/attention rank 2 does not exist/);
    expect(() => resolveRoleConfig('colocated', { apiPort: 'x' })).toThrow(/--api-port must be an integer/);
    const s = resolveRoleConfig('attention', { topology: '2A1F', config: '{"dbo":{"enabled":true,"decodeTokenThreshold":8}}', afdPort: '30000' });
    expect(s.afd).toMatchObject({ role: 'attention', port: 30000, dbo: { enabled: true, decodeTokenThreshold: 8, prefillTokenThreshold: 512 } });
    expect(servingOptionsOf(s).scheduler.dbo).toEqual(s.afd.dbo);
    expect(() => resolveRoleConfig('attention', { config: '{"bogus":1}' })).toThrow(/--config/);
  });
  it('reads --load-format and --seed, refusing unknown formats and bad seeds', () => {
    const base = { model: qwenTokenizerDir(), apiPort: '0' };
    expect(resolveRoleConfig('colocated', base).model).toMatchObject({ loadFormat: 'auto', seed: 0 });
    expect(resolveRoleConfig('ffn', { ...base, loadFormat: 'dummy', seed: '12' }).model).toMatchObject({ loadFormat: 'dummy', seed: 12 });
    expect(() => resolveRoleConfig('colocated', { ...base, loadFormat: 'gguf' })).toThrow('--load-format must be one of auto, safetensors, dummy (got "gguf")');
    expect(() => resolveRoleConfig('colocated', { ...base, seed: '-3' })).toThrow(/--seed/);
  });

  it('--enable-expert-parallel (or the config field) turns on expert parallelism; off by default', () => {
    expect(resolveRoleConfig('ffn', { topology: '2A2F' }).afd.enableExpertParallel).toBe(false);
    expect(resolveRoleConfig('ffn', { topology: '2A2F', enableExpertParallel: true }).afd.enableExpertParallel).toBe(true);
    expect(resolveRoleConfig('ffn', { topology: '2A2F', config: '{"enableExpertParallel":true}' }).afd.enableExpertParallel).toBe(true);
    // With expert parallelism the FFN ranks also listen on port + y + f, which must stay a port.
    expect(() => resolveRoleConfig('ffn', { topology: '2A2F', afdPort: '65533', enableExpertParallel: true })).toThrow(/port\.\.port\+3/);
  });

  it('--ep-transport (or the config field) picks the FFN group\'s exchange: auto by default, the flag over the config', () => {
    expect(resolveRoleConfig('ffn', { topology: '2A2F', enableExpertParallel: true }).afd.epTransport).toBe('auto');
    expect(resolveRoleConfig('ffn', { topology: '2A2F', enableExpertParallel: true, epTransport: 'peer' }).afd.epTransport).toBe('peer');
    expect(resolveRoleConfig('ffn', { topology: '2A2F', config: '{"epTransport":"tcp"}' }).afd.epTransport).toBe('tcp');
    expect(resolveRoleConfig('ffn', { topology: '2A2F', config: '{"epTransport":"tcp"}', epTransport: 'peer' }).afd.epTransport).toBe('peer');
    expect(() => resolveRoleConfig('ffn', { topology: '2A2F', epTransport: 'nvlink' })).toThrow('--ep-transport must be one of auto, tcp, nccl, peer (got "nvlink")');
  });
});
