import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inventorySchema } from '@afd/shared';
import { cpuOnlyFallback } from '../probe/runProbe.js';
import { buildInventory, cudaVersionString, deviceMps, findLocalModels, launchableModels, InventorySource } from './inventory.js';

describe('inventory', () => {
  it('always lists the CPU first and validates against the protocol schema', () => {
    const inv = buildInventory(cpuOnlyFallback('no GPU here'), undefined, '0.1.0', '/nonexistent');
    expect(inventorySchema.parse(inv)).toEqual(inv);
    expect(inv.devices[0]).toMatchObject({ kind: 'cpu', index: 0 });
    expect(inv.backends).toEqual(['cpu']);
    expect(inv.cudaError).toBe('no GPU here');
  });

  it('adds CUDA devices from the probe', () => {
    const probe = {
      ...cpuOnlyFallback(''),
      variant: 'cuda' as const,
      backends: ['cpu', 'cuda'],
      cudaRuntimeVersion: 13000,
      cudaDriverVersion: 12080,
      devices: [{ index: 0, name: 'NVIDIA H200', totalMemoryBytes: 141e9, freeMemoryBytes: 140e9, computeCapability: '9.0', multiProcessors: 132 }],
    };
    const inv = buildInventory(probe, undefined, '0.1.0', '/nonexistent');
    expect(inv.devices.map((d) => d.kind)).toEqual(['cpu', 'cuda']);
    expect(inv.versions.cudaRuntime).toBe('13.0');
    expect(inv.versions.cudaDriver).toBe('12.8');
    expect(inventorySchema.safeParse(inv).success).toBe(true);
  });

  it('reports MPS per GPU from the host\'s status and the device\'s compute capability', () => {
    const probe = { ...cpuOnlyFallback(''), devices: [{ index: 0, name: 'H100', totalMemoryBytes: 80e9, freeMemoryBytes: 79e9, computeCapability: '9.0', multiProcessors: 132 }] };
    const mps = { controlProgram: '/usr/bin/nvidia-cuda-mps-control', daemon: { pipeDirectory: '/h/mps/pipe', managedByAgent: true }, unavailable: null };
    const inv = buildInventory(probe, undefined, '0.1.0', '/nonexistent', null, mps);
    expect(inv.mps).toEqual(mps);
    expect(inv.devices[1]).toMatchObject({ kind: 'cuda', mps: { available: true, reason: null } });
    expect(inventorySchema.parse(inv)).toEqual(inv);
    expect(deviceMps('3.0', mps)).toEqual({ available: false, reason: 'CUDA MPS needs compute capability 3.5 or newer; this device has 3.0' });
    expect(deviceMps('9.0', { controlProgram: null, daemon: null, unavailable: 'not found' })).toEqual({ available: false, reason: 'not found' });
  });

  it('formats CUDA versions', () => {
    expect(cudaVersionString(0)).toBeNull();
    expect(cudaVersionString(12040)).toBe('12.4');
  });

  it('finds model folders that hold a config.json', () => {
    const dir = mkdtempSync(join(tmpdir(), 'afd-models-'));
    try {
      mkdirSync(join(dir, 'tiny'));
      writeFileSync(join(dir, 'tiny', 'config.json'), '{}');
      mkdirSync(join(dir, 'moe'));
      writeFileSync(join(dir, 'moe', 'config.json'), '{"num_experts": 128}');
      mkdirSync(join(dir, 'mixtral'));
      writeFileSync(join(dir, 'mixtral', 'config.json'), '{"num_local_experts": 8}');
      mkdirSync(join(dir, 'empty'));
      // make-model's staging copy of a model being written (config.json comes first)
      mkdirSync(join(dir, 'tiny2.tmp-4242-0123456789ab'));
      writeFileSync(join(dir, 'tiny2.tmp-4242-0123456789ab', 'config.json'), '{}');
      expect(findLocalModels(dir)).toEqual([
        { name: 'mixtral', dir: join(dir, 'mixtral'), numExperts: 8 },
        { name: 'moe', dir: join(dir, 'moe'), numExperts: 128 },
        { name: 'tiny', dir: join(dir, 'tiny') },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists the demo model first when this install has it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'afd-models-'));
    const saved = process.env['AFD_DEMO_MODEL_DIR'];
    try {
      const demo = join(dir, 'demo');
      mkdirSync(demo);
      for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) writeFileSync(join(demo, f), '{}');
      mkdirSync(join(dir, 'home', 'tiny'), { recursive: true });
      writeFileSync(join(dir, 'home', 'tiny', 'config.json'), '{}');
      process.env['AFD_DEMO_MODEL_DIR'] = demo;
      expect(launchableModels(join(dir, 'home'))).toEqual([
        { name: 'afd-demo-moe', dir: demo },
        { name: 'tiny', dir: join(dir, 'home', 'tiny') },
      ]);
      process.env['AFD_DEMO_MODEL_DIR'] = 'none';
      expect(launchableModels(join(dir, 'home')).map((m) => m.name)).toEqual(['tiny']);
      // The model a launch without a model directory loads: the demo model, else the tiny one.
      expect(buildInventory(cpuOnlyFallback(''), undefined, '0.1.0', join(dir, 'home')).defaultModel).toEqual({ kind: 'tiny', name: 'tiny-qwen3-moe', dir: join(dir, 'home', 'tiny-qwen3-moe'), description: null });
      process.env['AFD_DEMO_MODEL_DIR'] = demo;
      expect(buildInventory(cpuOnlyFallback(''), undefined, '0.1.0', join(dir, 'home')).defaultModel).toEqual({ kind: 'demo', name: 'afd-demo-moe', dir: demo, description: null });
      process.env['AFD_DEMO_MODEL_DIR'] = join(dir, 'missing');
      expect(buildInventory(cpuOnlyFallback(''), undefined, '0.1.0', join(dir, 'home')).defaultModel).toBeNull();
    } finally {
      if (saved === undefined) delete process.env['AFD_DEMO_MODEL_DIR'];
      else process.env['AFD_DEMO_MODEL_DIR'] = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('caches the probe between calls', async () => {
    let calls = 0;
    const src = new InventorySource('0.1.0', '/nonexistent', 60_000, async () => {
      calls++;
      return { result: cpuOnlyFallback('x') };
    });
    await src.get();
    await src.get();
    expect(calls).toBe(1);
  });
});
