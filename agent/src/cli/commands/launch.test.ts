import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerLaunch, remoteTokens } from './launch.js';

describe('remoteTokens', () => {
  const load = (f: string): string => `token-of-${f}`;
  it('reads one file for every remote host, or one per remote host in --hosts order', () => {
    const hosts = ['wss://a:7700', 'local', 'wss://b:7700'];
    expect(remoteTokens(hosts, ['/t'], load)).toEqual(['token-of-/t', 'token-of-/t']);
    expect(remoteTokens(hosts, ['/a', '/b'], load)).toEqual(['token-of-/a', 'token-of-/b']);
    expect(remoteTokens(['local'], ['/a', '/b', '/c'], load)).toEqual([]);
  });

  it('refuses a count of files that fits neither rule', () => {
    expect(() => remoteTokens(['wss://a:7700', 'wss://b:7700'], ['/a', '/b', '/c'], load)).toThrow(/given 3 times for 2 remote --hosts: give one file .* or one per remote host/);
  });

  it('falls back to $AFD_HOME/agent-token', () => {
    const prev = process.env['AFD_HOME'];
    process.env['AFD_HOME'] = '/somewhere';
    try {
      expect(remoteTokens(['wss://a:7700'], [], load)).toEqual(['token-of-/somewhere/agent-token']);
    } finally {
      if (prev === undefined) delete process.env['AFD_HOME'];
      else process.env['AFD_HOME'] = prev;
    }
  });
});

describe('launch flags', () => {
  it('refuses an --ep-transport that is not auto, tcp or peer before launching anything', () => {
    const program = new Command().exitOverride().configureOutput({ writeErr: () => {} });
    registerLaunch(program);
    program.commands.forEach((c) => c.exitOverride().configureOutput({ writeErr: () => {} }));
    expect(() => program.parse(['launch', '--ep-transport', 'nvlink'], { from: 'user' })).toThrow('--ep-transport must be one of auto, tcp, peer, nccl (got "nvlink")');
  });
});
