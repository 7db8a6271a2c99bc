import { describe, expect, it } from 'vitest';
import { resolveRoleSettings } from './roleSettings.js';
import { afdLinkOptions } from './nativeEngine.js';

describe('AFD options -> native link options', () => {
  it('passes topology, rank, hosts, port and deadline straight from the shared config', () => {
    const s = resolveRoleSettings('attention', {
      topology: '3A2F',
      rank: '2',
      afdPort: '31000',
      ffnHosts: '10.0.0.1,10.0.0.2',
      config: '{"stepDeadlineMs":1234,"computeGateOnAttention":true}',
    });
    expect(afdLinkOptions(s.afd)).toEqual({ topology: '3A2F', rank: 2, host: '127.0.0.1', ffnHosts: ['10.0.0.1', '10.0.0.2'], basePort: 31000, stepDeadlineMs: 1234 });
    expect(s.afd.computeGateOnAttention).toBe(true);
  });

  it('omits ffnHosts when every FFN rank is at --afd-host', () => {
    const s = resolveRoleSettings('ffn', { afdHost: 'ffn.local' });
    expect(afdLinkOptions(s.afd)).toEqual({ topology: '1A1F', rank: 0, host: 'ffn.local', basePort: 29500, stepDeadlineMs: 5000 });
  });

  it('refuses a connector the native link does not speak, saying what to set', () => {
    const s = resolveRoleSettings('attention', { config: '{"connector":"nccl"}' });
    expect(() => afdLinkOptions(s.afd)).toThrow(/connector "nccl" is not available.*"connector": "tcp"/);
  });
});
