import { describe, expect, it } from 'vitest';
import type { RankState, TopologyState } from '@afd/shared';
import { parseLaunchSummary } from '../testing/netns/bedClients.js';
import { launchSummary } from './launchSummary.js';

function rank(role: RankState['role'], n: number, apiUrl: string, pid: number): RankState {
  return { role, rank: n, agentId: 'x', state: 'ready', pid, apiUrl, progress: null, exitCode: null, message: null };
}

function state(routerUrl: string | null, ranks: RankState[]): TopologyState {
  return { launchId: 'l', state: 'running', spec: null, ranks, routerUrl, gpus: [] };
}

describe('launchSummary', () => {
  it('one host: the router and each rank\'s URL and pid, as they are', () => {
    const text = launchSummary('1A1F', [{ agentId: 'local', remote: null, state: state('http://127.0.0.1:8000', [rank('attention', 0, 'http://127.0.0.1:4001', 11), rank('ffn', 0, 'http://127.0.0.1:4002', 12)]) }], 3.25);
    expect(text).toBe(
      ['1A1F ready in 3.3 s', '  OpenAI API: http://127.0.0.1:8000/v1  (front router over 1 rank(s))', '  attention 0: http://127.0.0.1:4001  pid 11', '  ffn 0: http://127.0.0.1:4002  pid 12', 'Ctrl-C stops every rank.', ''].join('\n'),
    );
  });

  it('two hosts: a remote rank\'s loopback URL says it is reachable on its host only, and through what; the summary still parses', () => {
    const text = launchSummary(
      '2A2F',
      [
        { agentId: 'local', remote: null, state: state('http://10.88.0.1:8000', [rank('attention', 0, 'http://127.0.0.1:4001', 11), rank('ffn', 0, 'http://127.0.0.1:4002', 12)]) },
        { agentId: '10.88.0.2:7700', remote: { agent: '10.88.0.2:7700', address: '10.88.0.2' }, state: state('http://10.88.0.2:8000', [rank('attention', 1, 'http://127.0.0.1:35489', 21), rank('ffn', 1, 'http://127.0.0.1:35490', 22)]) },
      ],
      9,
    );
    const lines = text.split('\n');
    expect(lines).toContain('  local attention 0: http://127.0.0.1:4001  pid 11');
    expect(lines).toContain('  10.88.0.2:7700 attention 1: http://127.0.0.1:35489 (on 10.88.0.2 only: ranks listen on their host\'s loopback; requests reach it through the front router of agent 10.88.0.2:7700)  pid 21');
    expect(lines).toContain('  10.88.0.2:7700 ffn 1: http://127.0.0.1:35490 (on 10.88.0.2 only: ranks listen on their host\'s loopback; agent 10.88.0.2:7700 reads its health and metrics there)  pid 22');
    const parsed = parseLaunchSummary(lines);
    expect([...parsed.routers]).toEqual([['local', 'http://10.88.0.1:8000'], ['10.88.0.2:7700', 'http://10.88.0.2:8000']]);
    expect(parsed.ranks.map((r) => `${r.agentId} ${r.role} ${r.rank} ${r.apiUrl} ${r.pid}`)).toEqual([
      'local attention 0 http://127.0.0.1:4001 11',
      'local ffn 0 http://127.0.0.1:4002 12',
      '10.88.0.2:7700 attention 1 http://127.0.0.1:35489 21',
      '10.88.0.2:7700 ffn 1 http://127.0.0.1:35490 22',
    ]);
  });

  it('adds a line per GPU that holds several ranks, saying how they share it', () => {
    const gpus: TopologyState['gpus'] = [
      { agentId: 'local', deviceIndex: 0, ranks: [{ role: 'ffn', rank: 0, smShare: 60 }, { role: 'attention', rank: 0, smShare: 40 }], sharing: 'mps', note: 'MPS (control daemon on /h/mps/pipe)' },
      { agentId: 'local', deviceIndex: 1, ranks: [{ role: 'attention', rank: 1, smShare: null }], sharing: 'exclusive', note: null },
    ];
    const ranks = [rank('attention', 0, 'http://127.0.0.1:4001', 11), rank('ffn', 0, 'http://127.0.0.1:4002', 12)];
    const lines = launchSummary('1A1F', [{ agentId: 'local', remote: null, state: { ...state('http://127.0.0.1:8000', ranks), gpus } }], 1).split('\n');
    expect(lines).toContain('  GPU 0: ffn 0 (60% of SMs), attention 0 (40% of SMs) share it under MPS');
    expect(lines.some((l) => l.includes('GPU 1'))).toBe(false);
  });
});
