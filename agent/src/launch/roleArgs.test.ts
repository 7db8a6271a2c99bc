import { describe, expect, it } from 'vitest';
import { launchSpecSchema, type LaunchSpecInput } from '@afd/shared';
import { resolveRoleConfig } from '../role/roleConfig.js';
import { rankConfigFor, roleChildSpec, type RankContext } from './roleArgs.js';

const self = { file: '/usr/bin/node', args: ['/opt/afd/afd-agent.cjs'] };
const ctx: RankContext = { agentId: 'a', afdPort: 31000, apiHost: '127.0.0.1', defaultThreads: 2, baseEnv: { PATH: '/bin' } };

function spec(input: LaunchSpecInput) {
  return launchSpecSchema.parse(input);
}

/** The rank config a child gets: the JSON after --rank-config, read back the way the role process reads it. */
function configOf(args: string[]) {
  expect(args.filter((a) => a.startsWith('--'))).toEqual(['--rank-config']);
  const role = args[args.indexOf('role') + 1]!;
  return resolveRoleConfig(role, { rankConfig: args[args.indexOf('--rank-config') + 1] });
}

describe('roleChildSpec', () => {
  it('passes the spec\'s serving limits in the rank config and the API key in the environment only', () => {
    const lim = spec({
      mode: 'afd',
      topology: '1A1F',
      placements: [
        { role: 'attention', rank: 0, agentId: 'a', backend: 'cpu' },
        { role: 'ffn', rank: 0, agentId: 'a', backend: 'cpu' },
      ],
      serving: { maxNumSeqs: 8, maxNumBatchedTokens: 512, maxModelLen: 1024, maxQueuedRequests: 0, kvMemoryFraction: 0.5 },
    });
    const attn = roleChildSpec(self, lim, lim.placements[0]!, { ...ctx, apiKey: 'sekret' });
    expect(configOf(attn.args).serving).toMatchObject({ maxNumSeqs: 8, maxNumBatchedTokens: 512, maxModelLen: 1024, maxQueuedRequests: 0, kvMemoryFraction: 0.5, kvCacheMib: null });
    expect(attn.env['AFD_API_KEY']).toBe('sekret');
    expect(attn.args.join(' ')).not.toContain('sekret');
    const ffn = roleChildSpec(self, lim, lim.placements[1]!, { ...ctx, apiKey: 'sekret' });
    expect(configOf(ffn.args).serving.maxNumBatchedTokens).toBe(512);
    expect(ffn.env['AFD_API_KEY']).toBeUndefined();
  });

  const afd = spec({
    mode: 'afd',
    topology: '2A2F',
    model: { dir: '/models/tiny' },
    placements: [
      { role: 'attention', rank: 0, agentId: 'a', backend: 'cuda', deviceIndex: 2 },
      { role: 'attention', rank: 1, agentId: 'a', backend: 'cpu' },
      { role: 'ffn', rank: 0, agentId: 'a', backend: 'cpu', threads: 3 },
      { role: 'ffn', rank: 1, agentId: 'b', backend: 'cpu' },
    ],
    agentHosts: { a: '10.0.0.1', b: '10.0.0.2' },
    afd: { ncclEnv: { NCCL_DEBUG: 'INFO' }, dbo: { enabled: true } },
  });

  it('passes the rendezvous id of this start to every rank, and none when the agent gives none', () => {
    for (const p of afd.placements) {
      const c = roleChildSpec(self, afd, p, { ...ctx, rendezvousId: 'start-7f3a' });
      expect(configOf(c.args).afd.rendezvousId).toBe('start-7f3a');
    }
    expect(configOf(roleChildSpec(self, afd, afd.placements[0]!, ctx).args).afd.rendezvousId).toBe('');
  });

  it('pins a CUDA rank with CUDA_VISIBLE_DEVICES and passes the rendezvous of every FFN rank', () => {
    const c = roleChildSpec(self, afd, afd.placements[0]!, ctx);
    expect(c.file).toBe('/usr/bin/node');
    expect(c.args.slice(0, 3)).toEqual(['/opt/afd/afd-agent.cjs', 'role', 'attention']);
    const config = configOf(c.args);
    expect(config.model.dir).toBe('/models/tiny');
    expect(config.device).toEqual({ backend: 'cuda', index: 0, threads: 0 });
    expect(config.afd).toMatchObject({ role: 'attention', rank: 0, topology: { name: '2A2F' }, ffnHosts: ['10.0.0.1', '10.0.0.2'], host: '10.0.0.1', port: 31000, connector: 'tcp', dbo: { enabled: true } });
    expect(config.api).toEqual({ host: '127.0.0.1', port: 0, allowedOrigins: [], allowedMethods: ['*'], allowedHeaders: ['*'], allowCredentials: false, toolCallParser: 'auto', routerPrefixAffinity: true });
    expect(c.env['CUDA_VISIBLE_DEVICES']).toBe('2');
    // ncclEnv travels in the config (with multicast off); the role exports it, not the agent.
    expect(config.afd.ncclEnv).toEqual({ NCCL_DEBUG: 'INFO', NCCL_NVLS_ENABLE: '0' });
    expect(c.env['NCCL_DEBUG']).toBeUndefined();
    expect(c.env['AFD_SUPERVISED']).toBe('1');
    // What the child reads back is what the agent built: one object, no field lost on the way.
    expect(config).toEqual(rankConfigFor(afd, afd.placements[0]!, ctx));
  });

  it('shows every rank of connector peer the GPUs its host uses, its own first as device 0', () => {
    const peer = spec({
      mode: 'afd',
      topology: '2A1F',
      placements: [
        { role: 'ffn', rank: 0, agentId: 'a', backend: 'cuda', deviceIndex: 3 },
        { role: 'attention', rank: 0, agentId: 'a', backend: 'cuda', deviceIndex: 1 },
        { role: 'attention', rank: 1, agentId: 'a', backend: 'cuda', deviceIndex: 1 },
      ],
      afd: { connector: 'peer' },
    });
    const devices = peer.placements.map((p) => {
      const c = roleChildSpec(self, peer, p, ctx);
      return `${c.env['CUDA_VISIBLE_DEVICES']}#${configOf(c.args).device.index}`;
    });
    expect(devices).toEqual(['3,1#0', '1,3#0', '1,3#0']);
  });

  it('shows the FFN ranks of an expert exchange over epTransport peer the host\'s GPUs (the attention ranks stay pinned)', () => {
    // F0, F1, A0, A1 on GPUs 0..3 of agent a.
    const placements = (['ffn', 'ffn', 'attention', 'attention'] as const).map((role, i) => ({ role, rank: i % 2, agentId: 'a', backend: 'cuda' as const, deviceIndex: i }));
    const input = (epTransport: 'tcp' | 'peer'): LaunchSpecInput => ({ mode: 'afd', topology: '2A2F', placements, afd: { connector: 'nccl', enableExpertParallel: true, epTransport } });
    const visible = (s: ReturnType<typeof spec>) => s.placements.map((p) => roleChildSpec(self, s, p, ctx).env['CUDA_VISIBLE_DEVICES']);
    const ep = spec(input('peer'));
    expect(visible(ep)).toEqual(['0,1,2,3', '1,0,2,3', '2', '3']);
    expect(configOf(roleChildSpec(self, ep, ep.placements[0]!, ctx).args).afd).toMatchObject({ enableExpertParallel: true, epTransport: 'peer' });
    expect(visible(spec(input('tcp')))).toEqual(['0', '1', '2', '3']);
  });

  it('gives CPU ranks threads and hides GPUs; an FFN rank listens on its own host', () => {
    const c = roleChildSpec(self, afd, afd.placements[2]!, ctx);
    expect(configOf(c.args).device.threads).toBe(3);
    expect(configOf(c.args).afd.host).toBe('10.0.0.1');
    expect(configOf(roleChildSpec(self, afd, afd.placements[3]!, ctx).args).afd.host).toBe('10.0.0.2');
    expect(c.env['CUDA_VISIBLE_DEVICES']).toBe('');
    const a1 = roleChildSpec(self, afd, afd.placements[1]!, ctx);
    expect(configOf(a1.args).device.threads).toBe(2);
  });

  it('builds a colocated rank as the colocated role, with the built-in model when the spec names none', () => {
    const col = spec({ mode: 'colocated', placements: [{ role: 'colocated', rank: 0, agentId: 'a', backend: 'cpu' }] });
    const c = roleChildSpec(self, col, col.placements[0]!, ctx);
    expect(c.args.slice(1, 3)).toEqual(['role', 'colocated']);
    const config = configOf(c.args);
    expect(config.model.dir).toBeNull();
    expect(config.afd).toMatchObject({ role: 'colocated', rank: 0, port: 29500, ffnHosts: [] });
  });

  it('passes the load format and its seed', () => {
    expect(configOf(roleChildSpec(self, afd, afd.placements[0]!, ctx).args).model).toMatchObject({ loadFormat: 'auto', seed: 0 });
    const dummy = spec({ mode: 'colocated', model: { dir: '/models/cfg', loadFormat: 'dummy', seed: 9 }, placements: [{ role: 'colocated', rank: 0, agentId: 'a', backend: 'cpu' }] });
    expect(configOf(roleChildSpec(self, dummy, dummy.placements[0]!, ctx).args).model).toMatchObject({ loadFormat: 'dummy', seed: 9 });
    expect(() => spec({ mode: 'colocated', model: { loadFormat: 'pt' as never }, placements: dummy.placements })).toThrow(/load format must be one of auto, safetensors, dummy/);
  });

  it('passes any value as data inside one argument: nothing can smuggle in another option', () => {
    const col = spec({ mode: 'colocated', placements: [{ role: 'colocated', rank: 0, agentId: 'a', backend: 'cpu' }] });
    // The spec's schema refuses a relative path; past it, odd characters stay data of one JSON argument.
    expect(() => spec({ mode: 'colocated', model: { dir: '--evil' }, placements: col.placements })).toThrow(/must be an absolute path/);
    const odd = spec({ mode: 'colocated', model: { dir: '/m;rm -rf / --api-port 1' }, placements: col.placements });
    const c = roleChildSpec(self, odd, odd.placements[0]!, ctx);
    expect(c.args).toHaveLength(self.args.length + 4);
    expect(configOf(c.args).model.dir).toBe('/m;rm -rf / --api-port 1');
    expect(configOf(c.args).api.port).toBe(0);
  });
});
