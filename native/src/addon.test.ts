import { describe, expect, it } from 'vitest';
import { addonExportNames, loadAddon } from './addon.js';
import { loadTestingAddon, testingAddonExportNames } from './testing/testingAddon.js';
import { AFD_CONNECTORS, transportInfo } from '@afd/shared';

describe('native addon', () => {
  it('exports exactly what addon.ts declares', () => {
    const addon = loadAddon() as unknown as Record<string, unknown>;
    const actual = Object.keys(addon).sort();
    expect(actual).toEqual([...addonExportNames].sort());
    for (const name of addonExportNames) expect(typeof addon[name]).toBe('function');
  });

  it('the testing addon exports exactly what testing/testingAddon.ts declares: the product exports and its own', () => {
    const addon = loadTestingAddon() as unknown as Record<string, unknown>;
    expect(Object.keys(addon).sort()).toEqual([...testingAddonExportNames].sort());
    for (const name of testingAddonExportNames) expect(typeof addon[name]).toBe('function');
  });

  it('only the testing addon has the test-only backend cpu-graphs', () => {
    expect(loadAddon().probe().backends).not.toContain('cpu-graphs');
    expect(loadTestingAddon().probe().backends).toContain('cpu-graphs');
  });

  it('connectors() lists every connector with its facts, available where this build has it', () => {
    const addon = loadAddon();
    const facts = addon.connectors().map(({ available: _available, ...f }) => f);
    // The C++ registry and the shared transport table (shared/src/config/connectors.ts) agree on every fact both hold.
    expect(facts).toEqual(
      AFD_CONNECTORS.map((name) => {
        const { memory, oneHostOnly, needsCuda, graphCapturable } = transportInfo(name);
        return { name, memory, oneHostOnly, needsCuda, graphCapturable };
      }),
    );
    expect(facts[0]).toEqual({ name: 'tcp', memory: 'host', oneHostOnly: false, needsCuda: false, graphCapturable: false });
    const cuda = addon.probe().variant === 'cuda';
    expect(addon.connectors().map((c) => c.available)).toEqual([true, cuda, cuda]);
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
