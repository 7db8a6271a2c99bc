import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DUMMY_FILE } from '../modelSpec.js';
import { parseModelConfig } from './config.js';
import { DUMMY_NORM_SPREAD, dummyInit, dummyLoadSpec } from './dummy.js';
import { roleLoadSpec } from './loadSpec.js';
import { tempDir, tinyQwen3MoeConfig, writeTestModel } from '../testing/checkpointTesting.js';
import { tinyHybridConfigs } from '../testing/engineTesting.js';

const config = parseModelConfig('tiny/config.json', tinyQwen3MoeConfig({ initializer_range: 0.03 }));
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('dummy load spec (load format dummy)', () => {
  it('makes every tensor of the role a generated one, with the config dtype and HF-like scales', () => {
    const { spec, residentBytes } = dummyLoadSpec(config, 'colocated', { seed: 5 });
    expect(spec.files).toEqual([]);
    expect(spec.dummySeed).toBe(5);
    expect(spec.tensors.length).toBeGreaterThan(10);
    for (const t of spec.tensors) {
      expect(t.file).toBe(DUMMY_FILE);
      expect(t.dtype).toBe('bf16');
      expect(t.byteLength).toBe(t.shape.reduce((a, b) => a * b, 1) * 2);
    }
    expect(residentBytes).toBe(spec.tensors.reduce((s, t) => s + t.byteLength, 0));
    const norm = spec.tensors.find((t) => t.name === 'model.layers.0.input_layernorm.weight')!;
    expect(norm.dummy).toEqual({ scale: DUMMY_NORM_SPREAD, offset: 1 });
    const qNorm = spec.tensors.find((t) => t.name === 'model.layers.0.self_attn.q_norm.weight')!;
    expect(qNorm.dummy!.offset).toBe(1);
    const q = spec.tensors.find((t) => t.name === 'model.layers.0.self_attn.q_proj.weight')!;
    // Uniform on [-a, a] with std 0.03: a = 0.03 sqrt(3).
    expect(q.dummy!.scale).toBeCloseTo(0.03 * Math.sqrt(3), 12);
    expect(q.dummy!.offset).toBe(0);
    expect(dummyInit('embed', config).scale).toBeCloseTo(0.03 * Math.sqrt(3), 12);
    // The LM head (or a tied embedding) gives logits of about unit spread: std 1 / sqrt(hidden).
    const head = spec.tensors.find((t) => t.name === 'lm_head.weight')!;
    expect(head.dummy!.scale).toBeCloseTo(Math.sqrt(3 / config.hiddenSize), 12);
    expect(dummyInit('embed', { ...config, tieWordEmbeddings: true }).scale).toBeCloseTo(Math.sqrt(3 / config.hiddenSize), 12);
  });

  it('gives each role only the tensors it owns', () => {
    const attn = dummyLoadSpec(config, 'attention', { seed: 1 }).spec.tensors.map((t) => t.name);
    const ffn = dummyLoadSpec(config, 'ffn', { seed: 1 }).spec.tensors.map((t) => t.name);
    expect(attn.some((n) => n.includes('.experts.'))).toBe(false);
    expect(attn).toContain('model.embed_tokens.weight');
    expect(ffn.every((n) => n.includes('.mlp.'))).toBe(true);
    expect(ffn).toContain('model.layers.0.mlp.gate.weight');
    const gated = dummyLoadSpec(config, 'attention', { seed: 1, computeGateOnAttention: true }).spec.tensors.map((t) => t.name);
    expect(gated).toContain('model.layers.0.mlp.gate.weight');
  });

  it('follows torch_dtype and refuses a bad seed', () => {
    const f32 = parseModelConfig('f32/config.json', tinyQwen3MoeConfig({ torch_dtype: 'float32' }));
    expect(dummyLoadSpec(f32, 'ffn', { seed: 0 }).spec.tensors[0]!.dtype).toBe('f32');
    expect(() => parseModelConfig('x/config.json', tinyQwen3MoeConfig({ torch_dtype: 'int8' }))).toThrow(/torch_dtype int8 is not supported/);
    expect(() => dummyLoadSpec(config, 'ffn', { seed: -1 })).toThrow(/seed must be a non-negative integer/);
  });
});

describe('roleLoadSpec: the load formats', () => {
  it('auto on a config-only directory names --load-format dummy; dummy serves it', async () => {
    const dir = await tempDir('afd-dummy-cfg-');
    dirs.push(dir);
    await writeFile(join(dir, 'config.json'), JSON.stringify(tinyQwen3MoeConfig()));
    await expect(roleLoadSpec(dir, 'colocated')).rejects.toThrow(/no weights.*--load-format dummy/s);
    await expect(roleLoadSpec(dir, 'colocated', { loadFormat: 'safetensors' })).rejects.toThrow(/--load-format dummy/);
    const { spec } = await roleLoadSpec(dir, 'colocated', { loadFormat: 'dummy', seed: 3 });
    expect(spec.dummySeed).toBe(3);
    expect(spec.tensors.every((t) => t.file === DUMMY_FILE)).toBe(true);
  });

  it('dummy with safetensors present says once that they are ignored', async () => {
    const dir = await tempDir('afd-dummy-ckpt-');
    dirs.push(dir);
    await writeTestModel(dir, tinyQwen3MoeConfig(), { seed: 1 });
    const notes: string[] = [];
    const { spec } = await roleLoadSpec(dir, 'ffn', { loadFormat: 'dummy', onNote: (m) => notes.push(m) });
    expect(spec.files).toEqual([]);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatch(/safetensors files in .* are ignored/);
    const real = await roleLoadSpec(dir, 'ffn', { onNote: (m) => notes.push(m) });
    expect(real.spec.files.length).toBe(1);
    expect(notes).toHaveLength(1);
  });

  it('a missing directory is an error about config.json, in every format', async () => {
    const dir = join(await tempDir('afd-dummy-none-'), 'nope');
    dirs.push(dir);
    await mkdir(join(dir, '..'), { recursive: true });
    await expect(roleLoadSpec(dir, 'colocated', { loadFormat: 'dummy' })).rejects.toThrow(/config\.json/);
    await expect(roleLoadSpec(dir, 'colocated')).rejects.toThrow(/config\.json/);
  });
});

describe('dummy weights of the hybrid families', () => {
  it('draws (1 + weight) norms around 0, the GDN gated norm and dt_bias around 1, the conv as torch does', () => {
    const next = parseModelConfig('next/config.json', tinyHybridConfigs['qwen3_next']!);
    const { spec } = dummyLoadSpec(next, 'colocated', { seed: 3 });
    const init = (name: string) => spec.tensors.find((t) => t.name === name)!.dummy;
    expect(init('model.norm.weight')).toEqual({ scale: DUMMY_NORM_SPREAD, offset: 0 });
    expect(init('model.layers.1.self_attn.q_norm.weight')).toEqual({ scale: DUMMY_NORM_SPREAD, offset: 0 });
    expect(init('model.layers.0.linear_attn.norm.weight')).toEqual({ scale: DUMMY_NORM_SPREAD, offset: 1 });
    expect(init('model.layers.0.linear_attn.dt_bias')).toEqual({ scale: DUMMY_NORM_SPREAD, offset: 1 });
    expect(init('model.layers.0.linear_attn.A_log')).toEqual({ scale: 0.5, offset: 0 });
    expect(init('model.layers.0.linear_attn.conv1d.weight')).toEqual({ scale: 1 / Math.sqrt(3), offset: 0 });
    // Other families keep their norms around 1.
    expect(dummyInit('final_norm', config)).toEqual({ scale: DUMMY_NORM_SPREAD, offset: 1 });
  });
});
