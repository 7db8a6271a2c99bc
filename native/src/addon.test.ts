import { describe, expect, it } from 'vitest';
import { addonExportNames, loadAddon } from './addon.js';

describe('native addon', () => {
  it('exports exactly what addon.ts declares', () => {
    const addon = loadAddon() as unknown as Record<string, unknown>;
    const actual = Object.keys(addon).sort();
    expect(actual).toEqual([...addonExportNames].sort());
    for (const name of addonExportNames) expect(typeof addon[name]).toBe('function');
  });

  it('probe reports the CPU backend and a consistent variant', () => {
    const p = loadAddon().probe();
    expect(p.backends).toContain('cpu');
    expect(p.version).toMatch(/^\d+\.\d+\.\d+$/);
    if (p.variant === 'cuda') {
      expect(p.backends).toContain('cuda');
      expect(p.cudaRuntimeVersion).toBeGreaterThan(0);
    } else {
      expect(p.backends).toEqual(['cpu']);
    }
    if (p.devices.length === 0) expect(p.cudaError.length).toBeGreaterThan(0);
    for (const lib of [p.cublas, p.cublasLt, p.nccl]) {
      expect(lib.loaded || lib.error.length > 0).toBe(true);
    }
  });
});
