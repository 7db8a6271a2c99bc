import { describe, expect, it } from 'vitest';
import { rankUrlText, remoteRankHost } from './rankUrl.js';

const remote = { agent: '10.88.0.2:7700', address: '10.88.0.2' };

describe('rankUrlText', () => {
  it('a rank on the user\'s host prints as it is', () => {
    expect(rankUrlText('http://127.0.0.1:35489', 'attention', null)).toBe('http://127.0.0.1:35489');
  });

  it('a remote rank on loopback says where it is reachable and how the launch reaches it', () => {
    expect(rankUrlText('http://127.0.0.1:35489', 'attention', remote)).toBe(
      'http://127.0.0.1:35489 (on 10.88.0.2 only: ranks listen on their host\'s loopback; requests reach it through the front router of agent 10.88.0.2:7700)',
    );
    expect(rankUrlText('http://127.0.0.1:35490', 'ffn', { agent: 'gpu2', address: 'gpu2.lan' })).toBe(
      'http://127.0.0.1:35490 (on gpu2.lan only: ranks listen on their host\'s loopback; agent gpu2 reads its health and metrics there)',
    );
    expect(rankUrlText('http://[::1]:9', 'colocated', remote)).toMatch(/^http:\/\/\[::1\]:9 \(on 10\.88\.0\.2 only: .*front router of agent 10\.88\.0\.2:7700\)$/);
    expect(rankUrlText('http://localhost:9', 'attention', remote)).toMatch(/on 10\.88\.0\.2 only/);
    expect(rankUrlText('http://127.4.0.1:9/x', 'attention', remote)).toMatch(/^http:\/\/127\.4\.0\.1:9\/x \(on 10\.88\.0\.2 only/);
  });

  it('a remote rank on every interface prints its host\'s address instead', () => {
    expect(rankUrlText('http://0.0.0.0:35489', 'attention', remote)).toBe('http://10.88.0.2:35489');
    expect(rankUrlText('http://[::]:35489', 'attention', { agent: 'b', address: 'fd00::2' })).toBe('http://[fd00::2]:35489');
    expect(rankUrlText('http://0.0.0.0:35489/health', 'ffn', remote)).toBe('http://10.88.0.2:35489/health');
  });

  it('a remote rank on a routable address, or a value that is no URL, prints as it is', () => {
    expect(rankUrlText('http://10.88.0.2:35489', 'attention', remote)).toBe('http://10.88.0.2:35489');
    expect(rankUrlText('-', 'attention', remote)).toBe('-');
  });

  it('remoteRankHost: an agent reached at loopback is on the user\'s host; else its advertised address, else its URL\'s host', () => {
    expect(remoteRankHost('local', 'ws://127.0.0.1:7700', null)).toBeNull();
    expect(remoteRankHost('a', 'ws://localhost:7700', undefined)).toBeNull();
    expect(remoteRankHost('b', 'wss://10.88.0.2:7700', null)).toEqual({ agent: 'b', address: '10.88.0.2' });
    expect(remoteRankHost('b', 'wss://gpu2:7700', 'gpu2.lan')).toEqual({ agent: 'b', address: 'gpu2.lan' });
    // Through an SSH tunnel: reached at loopback, but it advertises its own address.
    expect(remoteRankHost('c', 'ws://127.0.0.1:7701', '10.88.0.3')).toEqual({ agent: 'c', address: '10.88.0.3' });
    expect(remoteRankHost('d', 'wss://[fd00::2]:7700', null)).toEqual({ agent: 'd', address: 'fd00::2' });
    expect(remoteRankHost('e', 'ws://[::1]:7700', null)).toBeNull();
    expect(remoteRankHost('f', 'not a url', null)).toBeNull();
    expect(remoteRankHost('g', 'wss://token@Gpu2.LAN:7700/x', null)).toEqual({ agent: 'g', address: 'gpu2.lan' });
  });
});
