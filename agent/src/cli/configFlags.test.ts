/** The config flag table as a role process reads it: the CORS and tool-call parser flags land in the api section, bad values name the flag. */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { resolveRoleConfig } from '../role/roleConfig.js';
import { CONFIG_FLAGS, configFlagsOf, configInputFromFlags, flagName, registerConfigFlags, smShareList } from './configFlags.js';

describe('CORS flags', () => {
  it('are vLLM\'s names, on both role and launch', () => {
    const names = ['--allowed-origins', '--allowed-methods', '--allowed-headers', '--allow-credentials'];
    for (const command of ['role', 'launch'] as const) expect(configFlagsOf(command).map(flagName)).toEqual(expect.arrayContaining(names));
    expect(CONFIG_FLAGS.filter((f) => names.includes(flagName(f))).map((f) => f.path[0])).toEqual(['api', 'api', 'api', 'api']);
  });

  it('take JSON lists (as vLLM) into the rank config\'s api section; absent ones keep the schema\'s defaults', () => {
    const c = resolveRoleConfig('colocated', { allowedOrigins: '["https://app.example", "http://localhost:3000"]', allowedHeaders: '["authorization"]', allowCredentials: true });
    expect(c.api).toMatchObject({ allowedOrigins: ['https://app.example', 'http://localhost:3000'], allowedMethods: ['*'], allowedHeaders: ['authorization'], allowCredentials: true });
    expect(resolveRoleConfig('colocated', {}).api).toMatchObject({ allowedOrigins: [], allowCredentials: false });
  });

  it('refuses what is not a JSON list of strings, naming the flag', () => {
    expect(() => resolveRoleConfig('colocated', { allowedOrigins: '*' })).toThrow(/--allowed-origins must be a JSON list of strings/);
    expect(() => resolveRoleConfig('colocated', { allowedMethods: '[1]' })).toThrow(/--allowed-methods must be a JSON list of strings/);
  });
});

describe('--tool-call-parser', () => {
  it('sets api.toolCallParser on role and launch (default auto), naming the choices on a bad value', () => {
    for (const command of ['role', 'launch'] as const) expect(configFlagsOf(command).map(flagName)).toContain('--tool-call-parser');
    expect(resolveRoleConfig('colocated', { toolCallParser: 'deepseek_v3' }).api.toolCallParser).toBe('deepseek_v3');
    expect(resolveRoleConfig('colocated', {}).api.toolCallParser).toBe('auto');
    expect(() => resolveRoleConfig('colocated', { toolCallParser: 'mistral' })).toThrow(/--tool-call-parser must be one of auto, hermes, deepseek_v3, llama3_json/);
  });
});

describe('--[no-]enable-prefix-caching', () => {
  const parse = (argv: string[]): Record<string, unknown> => {
    const cmd = registerConfigFlags(new Command('role').exitOverride(), 'role');
    cmd.parse(argv, { from: 'user' });
    return configInputFromFlags(cmd.opts(), 'role');
  };
  it('is vLLM\'s pair of flags: unset by default (the schema\'s null: on where the model allows), off with --no-enable-prefix-caching', () => {
    for (const command of ['role', 'launch'] as const) expect(configFlagsOf(command).map(flagName)).toEqual(expect.arrayContaining(['--enable-prefix-caching', '--no-enable-prefix-caching']));
    expect(parse([])).toEqual({});
    expect(parse(['--no-enable-prefix-caching'])).toEqual({ serving: { enablePrefixCaching: false } });
    expect(parse(['--enable-prefix-caching'])).toEqual({ serving: { enablePrefixCaching: true } });
    expect(resolveRoleConfig('colocated', {}).serving.enablePrefixCaching).toBeNull();
    expect(resolveRoleConfig('colocated', { enablePrefixCaching: false }).serving.enablePrefixCaching).toBe(false);
  });
});

describe('--gpu-sharing and --sm-share', () => {
  const parse = (argv: string[]): Record<string, unknown> => {
    const cmd = registerConfigFlags(new Command('launch').exitOverride(), 'launch');
    cmd.parse(argv, { from: 'user' });
    return configInputFromFlags(cmd.opts(), 'launch');
  };
  it('set the launch spec\'s gpuSharing section, on launch only', () => {
    expect(configFlagsOf('launch').map(flagName)).toEqual(expect.arrayContaining(['--gpu-sharing', '--sm-share']));
    expect(configFlagsOf('role').map(flagName)).not.toContain('--gpu-sharing');
    expect(parse(['--gpu-sharing', 'mps', '--sm-share', 'attention=40, ffn=60'])).toEqual({ gpuSharing: { mode: 'mps', smShare: { attention: 40, ffn: 60 } } });
    expect(parse([])).toEqual({});
  });

  it('refuse a bad mode or share, naming the flag', () => {
    expect(() => parse(['--gpu-sharing', 'share'])).toThrow(/--gpu-sharing must be one of auto, mps, time-slice \(got "share"\)/);
    expect(() => smShareList('attention=0', '--sm-share')).toThrow('--sm-share: attention=0 is not a percentage of SMs from 1 to 100');
    expect(() => smShareList('gate=50', '--sm-share')).toThrow(/--sm-share takes role=percent pairs of attention, ffn, colocated, prefill, e.g. attention=40,ffn=60 \(got "gate=50"\)/);
    expect(() => smShareList('ffn=50,ffn=60', '--sm-share')).toThrow('--sm-share names ffn twice');
    expect(smShareList('colocated=50', '--sm-share')).toEqual({ colocated: 50 });
    expect(smShareList('prefill=30,attention=20', '--sm-share')).toEqual({ prefill: 30, attention: 20 });
  });
});

describe('--pd-transport', () => {
  it('sets afd.pd.transport on role and launch (default auto), naming the flag and choices on a bad value', () => {
    for (const command of ['role', 'launch'] as const) expect(configFlagsOf(command).map(flagName)).toContain('--pd-transport');
    expect(resolveRoleConfig('prefill', { topology: '1P1A1F', pdTransport: 'peer' }).afd.pd.transport).toBe('peer');
    expect(resolveRoleConfig('attention', { topology: '1P1A1F', pdTransport: 'tcp' }).afd.pd).toMatchObject({ transport: 'tcp', minPromptTokens: 64 });
    expect(resolveRoleConfig('attention', { topology: '1P1A1F' }).afd.pd.transport).toBe('auto');
    expect(() => resolveRoleConfig('attention', { topology: '1P1A1F', pdTransport: 'rdma' })).toThrow(/--pd-transport must be one of auto, tcp, peer \(got "rdma"\)/);
  });
});
