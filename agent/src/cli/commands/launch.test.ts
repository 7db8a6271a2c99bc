import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { launchSpecSchema } from '@afd/shared';
import { buildCliLaunchSpec } from '../../launch/cliSpec.js';
import { launchConfigOf, registerLaunch, remoteTokens } from './launch.js';

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
  it('refuses an --ep-transport that is not auto, tcp, nccl or peer before launching anything', () => {
    const program = new Command().exitOverride().configureOutput({ writeErr: () => {} });
    registerLaunch(program);
    program.commands.forEach((c) => c.exitOverride().configureOutput({ writeErr: () => {} }));
    expect(() => program.parse(['launch', '--ep-transport', 'nvlink'], { from: 'user' })).toThrow('--ep-transport must be one of auto, tcp, nccl, peer (got "nvlink")');
  });
});

/** The launch config of a command line, read by the real `launch` command's flags (its action replaced). */
function configOfArgs(args: string[]) {
  const program = new Command().exitOverride().configureOutput({ writeErr: () => {} });
  registerLaunch(program);
  let opts: Parameters<typeof launchConfigOf>[0] | undefined;
  program.commands[0]!.exitOverride().action((o: Parameters<typeof launchConfigOf>[0]) => void (opts = o));
  program.parse(['launch', ...args], { from: 'user' });
  return launchConfigOf(opts!);
}

describe('launch flags -> the launch spec', () => {
  const local = { agentId: 'local', address: '127.0.0.1', gpus: [] };
  const specOf = (args: string[], backend: 'cpu' | 'cuda' = 'cpu') => buildCliLaunchSpec({ topology: '2A2F', backend, hosts: [{ ...local, gpus: [0, 1, 2, 3] }], config: configOfArgs(args) });

  it('leaves absent flags to the schema: the spec is the defaults, with the CLI\'s restart policy and backend connector', () => {
    expect(configOfArgs([])).toEqual({ restart: {} });
    const spec = specOf([]);
    const defaults = launchSpecSchema.parse({ mode: 'afd', topology: '2A2F', placements: spec.placements });
    expect(spec.restart).toEqual({ ...defaults.restart, policy: 'on-failure' });
    expect(spec.serving).toEqual(defaults.serving);
    expect(spec.model).toEqual(defaults.model);
    expect(spec.mode === 'afd' && spec.afd).toEqual(defaults.mode === 'afd' && defaults.afd);
    expect(specOf([], 'cuda').mode === 'afd' && specOf([], 'cuda')).toMatchObject({ afd: { connector: 'nccl' } });
  });

  it('puts each flag in its field, --config under the flags', () => {
    const spec = specOf(['--dbo', '--connector', 'nccl', '--max-num-seqs', '8', '--kv-block-size', '32', '--restart', 'never', '--max-restarts', '2', '--config', '{"dbo":{"decodeTokenThreshold":8},"stepDeadlineMs":900,"connector":"tcp"}', '--load-format', 'dummy', '--seed', '5', '--api-port', '0', '--allowed-origins', '["https://app.example"]', '--allow-credentials', '--tool-call-parser', 'hermes', '--no-router-prefix-affinity', '--no-enable-prefix-caching'], 'cuda');
    expect(spec.mode === 'afd' && spec.afd).toMatchObject({ connector: 'nccl', dbo: { enabled: true, decodeTokenThreshold: 8 }, stepDeadlineMs: 900 });
    expect(spec.serving).toMatchObject({ maxNumSeqs: 8, kvBlockSize: 32, enablePrefixCaching: false });
    expect(spec.restart).toMatchObject({ policy: 'never', maxRestarts: 2 });
    expect(spec.model).toMatchObject({ loadFormat: 'dummy', seed: 5 });
    expect(spec.apiPort).toBe(0);
    expect(spec.api).toEqual({ allowedOrigins: ['https://app.example'], allowedMethods: ['*'], allowedHeaders: ['*'], allowCredentials: true, toolCallParser: 'hermes', routerPrefixAffinity: false });
    expect(specOf([]).api).toMatchObject({ allowedOrigins: [], toolCallParser: 'auto', routerPrefixAffinity: true });
    expect(specOf([]).serving.enablePrefixCaching).toBeNull(); // CORS off unless asked for; the parser from the template
  });

  it('refuses a --config the schema refuses, naming the field', () => {
    expect(() => configOfArgs(['--config', '{"role":"ffn"}'])).toThrow(/--config: role: unknown key/);
    expect(() => configOfArgs(['--config', '{"dbo":{"enabled":"yes"}}'])).toThrow(/--config: dbo\.enabled: /);
    expect(() => configOfArgs(['--config', '/nonexistent.json'])).toThrow(/--config \/nonexistent.json: cannot read the file/);
    expect(() => configOfArgs(['--allowed-origins', 'https://app.example'])).toThrow(/--allowed-origins must be a JSON list of strings/);
  });
});
