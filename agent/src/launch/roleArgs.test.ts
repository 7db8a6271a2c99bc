import { describe, expect, it } from 'vitest';
import { launchSpecSchema, type LaunchSpecInput } from '@afd/shared';
import { roleChildSpec, type RankContext } from './roleArgs.js';

const self = { file: '/usr/bin/node', args: ['/opt/afd/afd-agent.cjs'] };
const ctx: RankContext = { agentId: 'a', afdPort: 31000, apiHost: '127.0.0.1', defaultThreads: 2, baseEnv: { PATH: '/bin' } };

function spec(input: LaunchSpecInput) {
  return launchSpecSchema.parse(input);
}

describe('roleChildSpec', () => {
  it('passes the spec\'s serving limits (the FFN rank only its step budget) and the API key in the environment only', () => {
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
    const flag = (args: string[], f: string): string | undefined => (args.includes(f) ? args[args.indexOf(f) + 1] : undefined);
    expect(['--max-num-seqs', '--max-num-batched-tokens', '--max-model-len', '--max-queued-requests', '--kv-memory-fraction'].map((f) => flag(attn.args, f))).toEqual(['8', '512', '1024', '0', '0.5']);
    expect(attn.args).not.toContain('--kv-cache-mib');
    expect(attn.env['AFD_API_KEY']).toBe('sekret');
    expect(attn.args.join(' ')).not.toContain('sekret');
    const ffn = roleChildSpec(self, lim, lim.placements[1]!, { ...ctx, apiKey: 'sekret' });
    expect(flag(ffn.args, '--max-num-batched-tokens')).toBe('512');
    expect(ffn.args).not.toContain('--max-num-seqs');
    expect(ffn.env['AFD_API_KEY']).toBeUndefined();
  });

  const afd = spec({
    mode: 'afd',
    topology: '2A2F',
    modelDir: '/models/tiny',
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
      expect(c.args[c.args.indexOf('--rendezvous-id') + 1]).toBe('start-7f3a');
    }
    expect(roleChildSpec(self, afd, afd.placements[0]!, ctx).args).not.toContain('--rendezvous-id');
  });

  it('pins a CUDA rank with CUDA_VISIBLE_DEVICES and passes the rendezvous of every FFN rank', () => {
    const c = roleChildSpec(self, afd, afd.placements[0]!, ctx);
    expect(c.file).toBe('/usr/bin/node');
    expect(c.args.slice(0, 3)).toEqual(['/opt/afd/afd-agent.cjs', 'role', 'attention']);
    const flag = (name: string) => c.args[c.args.indexOf(name) + 1];
    expect(flag('--model')).toBe('/models/tiny');
    expect(flag('--device')).toBe('0');
    expect(flag('--backend')).toBe('cuda');
    expect(flag('--topology')).toBe('2A2F');
    expect(flag('--ffn-hosts')).toBe('10.0.0.1,10.0.0.2');
    expect(flag('--afd-port')).toBe('31000');
    expect(flag('--api-port')).toBe('0');
    expect(JSON.parse(flag('--config')!)).toMatchObject({ connector: 'tcp', dbo: { enabled: true } });
    expect(c.args).not.toContain('--threads');
    expect(c.env['CUDA_VISIBLE_DEVICES']).toBe('2');
    // ncclEnv travels in the config (with multicast off); the role exports it, not the agent.
    expect(JSON.parse(flag('--config')!).ncclEnv).toEqual({ NCCL_DEBUG: 'INFO', NCCL_NVLS_ENABLE: '0' });
    expect(c.env['NCCL_DEBUG']).toBeUndefined();
    expect(c.env['AFD_SUPERVISED']).toBe('1');
  });

  it('shows every rank of connector peer the GPUs its host uses, its own first as device 0', () => {
    const peer = spec({
      mode: 'afd',
      topology: '2A1F',
      modelDir: null,
      placements: [
        { role: 'ffn', rank: 0, agentId: 'a', backend: 'cuda', deviceIndex: 3 },
        { role: 'attention', rank: 0, agentId: 'a', backend: 'cuda', deviceIndex: 1 },
        { role: 'attention', rank: 1, agentId: 'a', backend: 'cuda', deviceIndex: 1 },
      ],
      afd: { connector: 'peer' },
    });
    const devices = peer.placements.map((p) => {
      const c = roleChildSpec(self, peer, p, ctx);
      return `${c.env['CUDA_VISIBLE_DEVICES']}#${c.args[c.args.indexOf('--device') + 1]}`;
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
    expect(JSON.parse(roleChildSpec(self, ep, ep.placements[0]!, ctx).args.at(-1)!)).toMatchObject({ enableExpertParallel: true, epTransport: 'peer' });
    expect(visible(spec(input('tcp')))).toEqual(['0', '1', '2', '3']);
  });

  it('gives CPU ranks threads and hides GPUs; an FFN rank listens on its own host', () => {
    const c = roleChildSpec(self, afd, afd.placements[2]!, ctx);
    const flag = (name: string) => c.args[c.args.indexOf(name) + 1];
    expect(flag('--threads')).toBe('3');
    expect(flag('--afd-host')).toBe('10.0.0.1');
    expect(c.env['CUDA_VISIBLE_DEVICES']).toBe('');
    const a1 = roleChildSpec(self, afd, afd.placements[1]!, ctx);
    expect(a1.args[a1.args.indexOf('--threads') + 1]).toBe('2');
  });

  it('builds a colocated rank without AFD flags and without --model for the built-in model', () => {
    const col = spec({ mode: 'colocated', placements: [{ role: 'colocated', rank: 0, agentId: 'a', backend: 'cpu' }] });
    const c = roleChildSpec(self, col, col.placements[0]!, ctx);
    expect(c.args).not.toContain('--model');
    expect(c.args).not.toContain('--afd-port');
    expect(c.args.slice(1, 3)).toEqual(['role', 'colocated']);
  });

  it('passes the load format and its seed only when the weights are dummy', () => {
    expect(roleChildSpec(self, afd, afd.placements[0]!, ctx).args).not.toContain('--load-format');
    const dummy = spec({ mode: 'colocated', modelDir: '/models/cfg', loadFormat: 'dummy', seed: 9, placements: [{ role: 'colocated', rank: 0, agentId: 'a', backend: 'cpu' }] });
    const c = roleChildSpec(self, dummy, dummy.placements[0]!, ctx);
    expect(c.args[c.args.indexOf('--load-format') + 1]).toBe('dummy');
    expect(c.args[c.args.indexOf('--seed') + 1]).toBe('9');
    expect(() => spec({ mode: 'colocated', loadFormat: 'pt' as never, placements: dummy.placements })).toThrow(/load format must be one of auto, safetensors, dummy/);
  });

  it('refuses values that look like options or carry odd characters', () => {
    const col = spec({ mode: 'colocated', placements: [{ role: 'colocated', rank: 0, agentId: 'a', backend: 'cpu' }] });
    const bad = { ...col, modelDir: '--evil' }; // the schema refuses it too (not absolute); this is the second line
    expect(() => roleChildSpec(self, bad, bad.placements[0]!, ctx)).toThrow(/refusing to pass --model/);
    const bad2 = spec({ mode: 'colocated', modelDir: '/m;rm -rf', placements: [{ role: 'colocated', rank: 0, agentId: 'a', backend: 'cpu' }] });
    expect(() => roleChildSpec(self, bad2, bad2.placements[0]!, ctx)).toThrow(/refusing/);
  });
});
