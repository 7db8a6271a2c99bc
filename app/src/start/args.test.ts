import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { consoleServiceOptions, parseStartArgs } from './args.js';

describe('parseStartArgs', () => {
  it('defaults to Electron, 1A1F, auto backend, launch on', () => {
    expect(parseStartArgs([])).toMatchObject({ web: false, open: true, launch: true, topology: '1A1F', backend: 'auto', modelDir: null, apiPort: 0, port: null });
    expect(parseStartArgs(['--port', '0']).port).toBe(0);
  });
  it('reads browser-mode flags', () => {
    expect(parseStartArgs(['--web', '--port', '8080', '--no-open', '--no-launch', '--topology', '2a2f', '--backend', 'cpu', '--model', '/m'])).toMatchObject({
      web: true,
      port: 8080,
      open: false,
      launch: false,
      topology: '2A2F',
      backend: 'cpu',
      modelDir: '/m',
    });
  });
  it('--no-agent implies no launch', () => {
    expect(parseStartArgs(['--no-agent'])).toMatchObject({ agent: false, launch: false });
  });
  it('rejects bad values with the rule', () => {
    expect(() => parseStartArgs(['--backend', 'tpu'])).toThrow(/auto, cpu or cuda/);
    expect(() => parseStartArgs(['--port', '70000'])).toThrow(/port number/);
    expect(() => parseStartArgs(['--topology', 'big'])).toThrow(/xAyF/);
    expect(() => parseStartArgs(['--bogus'])).toThrow(/Usage: npm start/);
  });
  it('trusts a --ca-file CA besides the system CAs, and says what is wrong with a bad file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'afd-ca-'));
    try {
      const pem = `${rootCertificates[0]!}\n`;
      writeFileSync(join(dir, 'ca.pem'), pem);
      writeFileSync(join(dir, 'junk.pem'), 'not a certificate');
      const log = (): void => undefined;
      expect(consoleServiceOptions(parseStartArgs([]), log).ca).toBeUndefined();
      expect(consoleServiceOptions(parseStartArgs(['--api-key', 'k-123']), log).apiKey).toBe('k-123');
      const ca = consoleServiceOptions(parseStartArgs(['--ca-file', join(dir, 'ca.pem')]), log).ca!;
      expect(ca.length).toBe(rootCertificates.length + 1);
      expect(ca.at(-1)).toBe(pem);
      expect(() => consoleServiceOptions(parseStartArgs(['--ca-file', join(dir, 'missing.pem')]), log)).toThrow(/--ca-file .*missing\.pem cannot be read/);
      expect(() => consoleServiceOptions(parseStartArgs(['--ca-file', join(dir, 'junk.pem')]), log)).toThrow(/holds no PEM certificate/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
