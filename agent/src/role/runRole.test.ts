/** runRole in-process with a fake engine opener: event order, HTTP, readiness, stop. */
import { describe, expect, it } from 'vitest';
import { parseRoleEventLine, type RoleEvent } from '@afd/shared';
import { createLogger } from '../util/logger.js';
import { FakeEngine } from '../serving/testing/FakeEngine.js';
import { qwenTokenizerDir } from '../serving/testing/qwenTokenizer.js';
import { unavailableFfnServer } from './ffnServer.js';
import { RoleEvents } from './RoleEvents.js';
import { resolveRoleSettings } from './roleSettings.js';
import { runRole } from './runRole.js';

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
    const settings = resolveRoleSettings('colocated', { model: qwenTokenizerDir(), apiPort: '0', servedModelName: 'tiny' });
    let peer: ((p: string | null) => void) | undefined;
    const role = await runRole(settings, {
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
    const res = await fetch(`${role.apiUrl}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 3 }) });
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
    const settings = resolveRoleSettings('attention', { model: qwenTokenizerDir(), apiPort: '0', topology: '2A1F', rank: '1' });
    await expect(
      runRole(settings, {
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

  it('validates settings through the shared config schema', () => {
    expect(() => resolveRoleSettings('router', {})).toThrow(/unknown role "router"/);
    expect(() => resolveRoleSettings('attention', { topology: '1A2F' })).toThrow(/topology/);
    expect(() => resolveRoleSettings('attention', { topology: '2A1F', rank: '2' })).toThrow(/attention rank 2 does not exist/);
    expect(() => resolveRoleSettings('colocated', { apiPort: 'x' })).toThrow(/--api-port must be an integer/);
    const s = resolveRoleSettings('attention', { topology: '2A1F', config: '{"dbo":{"enabled":true,"decodeTokenThreshold":8}}', afdPort: '30000' });
    expect(s.afd).toMatchObject({ role: 'attention', port: 30000, dbo: { enabled: true, decodeTokenThreshold: 8, prefillTokenThreshold: 512 } });
    expect(s.serving.scheduler.dbo).toEqual(s.afd.dbo);
    expect(() => resolveRoleSettings('attention', { config: '{"bogus":1}' })).toThrow(/--config/);
  });
  it('reads --load-format and --seed, refusing unknown formats and bad seeds', () => {
    const base = { model: qwenTokenizerDir(), apiPort: '0' };
    expect(resolveRoleSettings('colocated', base)).toMatchObject({ loadFormat: 'auto', seed: 0 });
    expect(resolveRoleSettings('ffn', { ...base, loadFormat: 'dummy', seed: '12' })).toMatchObject({ loadFormat: 'dummy', seed: 12 });
    expect(() => resolveRoleSettings('colocated', { ...base, loadFormat: 'gguf' })).toThrow('--load-format must be one of auto, safetensors, dummy (got "gguf")');
    expect(() => resolveRoleSettings('colocated', { ...base, seed: '-3' })).toThrow(/--seed/);
  });

  it('--enable-expert-parallel (or the config field) turns on expert parallelism; off by default', () => {
    expect(resolveRoleSettings('ffn', { topology: '2A2F' }).afd.enableExpertParallel).toBe(false);
    expect(resolveRoleSettings('ffn', { topology: '2A2F', enableExpertParallel: true }).afd.enableExpertParallel).toBe(true);
    expect(resolveRoleSettings('ffn', { topology: '2A2F', config: '{"enableExpertParallel":true}' }).afd.enableExpertParallel).toBe(true);
    // With expert parallelism the FFN ranks also listen on port + y + f, which must stay a port.
    expect(() => resolveRoleSettings('ffn', { topology: '2A2F', afdPort: '65533', enableExpertParallel: true })).toThrow(/port\.\.port\+3/);
  });

  it('--ep-transport (or the config field) picks the FFN group\'s exchange: auto by default, the flag over the config', () => {
    expect(resolveRoleSettings('ffn', { topology: '2A2F', enableExpertParallel: true }).afd.epTransport).toBe('auto');
    expect(resolveRoleSettings('ffn', { topology: '2A2F', enableExpertParallel: true, epTransport: 'peer' }).afd.epTransport).toBe('peer');
    expect(resolveRoleSettings('ffn', { topology: '2A2F', config: '{"epTransport":"tcp"}' }).afd.epTransport).toBe('tcp');
    expect(resolveRoleSettings('ffn', { topology: '2A2F', config: '{"epTransport":"tcp"}', epTransport: 'peer' }).afd.epTransport).toBe('peer');
    expect(() => resolveRoleSettings('ffn', { topology: '2A2F', epTransport: 'nvlink' })).toThrow('--ep-transport must be auto, tcp, peer, nccl (peer: CUDA FFN ranks of one host; nccl: CUDA FFN ranks on GPUs of their own, any hosts; tcp: any hosts), got "nvlink"');
  });
});
