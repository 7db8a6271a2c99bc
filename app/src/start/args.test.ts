import { describe, expect, it } from 'vitest';
import { parseStartArgs } from './args.js';

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
});
