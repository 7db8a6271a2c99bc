import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mkdtemp } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildLoadSpec, familyRowOf, fromBf16Bits, modelTensors, parseModelConfig, readSafetensorsHeader, storedTensorPlans } from '@afd/native/checkpoint';
import { isStagingDirName, makeModel, markerFileName, OutDirExistsError, planShards } from './makeModel.js';
import { findPreset, modelPresets, presetConfigJson } from './presets.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'afd-make-model-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function filesOf(dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const f of (await readdir(dir)).sort()) out.set(f, await readFile(join(dir, f)));
  return out;
}

describe('presets', () => {
  it('every preset is a valid config of its architecture', () => {
    for (const p of modelPresets) {
      const c = parseModelConfig(`${p.arch}/${p.name}`, presetConfigJson(p));
      expect(c.arch).toBe(p.arch);
    }
  });

  it('has the Qwen3-30B-A3B shapes', () => {
    const c = parseModelConfig('x', presetConfigJson(findPreset('qwen3_moe', 'qwen3-30b-a3b')));
    expect(c).toMatchObject({ hiddenSize: 2048, numLayers: 48, numExperts: 128, numExpertsPerTok: 8, moeIntermediateSize: 768, numHeads: 32, numKvHeads: 4, headDim: 128, vocabSize: 151936, intermediateSize: 6144, normTopkProb: true });
  });

  it('has the published DeepSeek-V2-Lite and DeepSeek-V3 shapes', () => {
    const lite = parseModelConfig('x', presetConfigJson(findPreset('deepseek_v2', 'deepseek-v2-lite')));
    expect(lite).toMatchObject({
      numLayers: 27, hiddenSize: 2048, numHeads: 16, vocabSize: 102400, numExperts: 64, numExpertsPerTok: 6, moeIntermediateSize: 1408,
      mla: { qLoraRank: 0, kvLoraRank: 512, qkNopeHeadDim: 128, qkRopeHeadDim: 64, vHeadDim: 128 },
      routing: { numSharedExperts: 2, topkMethod: 'greedy', scoringFunc: 'softmax' },
    });
    expect(lite.layers.findIndex((l) => l.ffn !== 'dense')).toBe(1);
    expect(lite.layers[1]).toEqual({ attention: 'mla', ffn: 'moe+shared' });
    const v3 = parseModelConfig('x', presetConfigJson(findPreset('deepseek_v3', 'deepseek-v3')));
    expect(v3).toMatchObject({
      numLayers: 61, hiddenSize: 7168, numHeads: 128, vocabSize: 129280, numExperts: 256, numExpertsPerTok: 8, moeIntermediateSize: 2048, normTopkProb: true,
      mla: { qLoraRank: 1536, kvLoraRank: 512, qkNopeHeadDim: 128, qkRopeHeadDim: 64, vHeadDim: 128 },
      routing: { numSharedExperts: 1, topkMethod: 'noaux_tc', scoringFunc: 'sigmoid', nGroup: 8, topkGroup: 4, routedScalingFactor: 2.5 },
    });
    expect(v3.layers.findIndex((l) => l.ffn !== 'dense')).toBe(3);
    for (const p of [findPreset('deepseek_v2', 'deepseek-v2-lite'), findPreset('deepseek_v3', 'deepseek-v3')]) expect(p.weights).toBe('device');
  });

  it('has the published Qwen3-Next-80B-A3B and Qwen3.5-35B-A3B shapes (hybrid layers, config only)', () => {
    const next = parseModelConfig('x', presetConfigJson(findPreset('qwen3_next', 'qwen3-next-80b-a3b')));
    expect(next).toMatchObject({
      numLayers: 48, hiddenSize: 2048, numHeads: 16, numKvHeads: 2, headDim: 256, rotaryDim: 64, vocabSize: 151936, intermediateSize: 5120, ropeTheta: 1e7,
      numExperts: 512, numExpertsPerTok: 10, moeIntermediateSize: 512, normTopkProb: true, gatedSharedExpert: { intermediateSize: 512 },
      gdn: { numKeyHeads: 16, numValueHeads: 32, keyHeadDim: 128, valueHeadDim: 128, convKernel: 4, projLayout: 'grouped' },
      normUnitOffset: true, maxPositionEmbeddings: 262144,
    });
    const count = (c: typeof next, kind: string) => c.layers.filter((l) => l.attention === kind).length;
    expect([count(next, 'gdn'), count(next, 'gqa_gated')]).toEqual([36, 12]);
    expect(next.layers[3]).toEqual({ attention: 'gqa_gated', ffn: 'moe+gated_shared' });
    // About 80B parameters (the name's), of which the experts hold nearly all.
    const params = modelTensors(next).reduce((s, t) => s + t.shape.reduce((a, b) => a * b, 1), 0);
    expect(params / 1e9).toBeGreaterThan(79);
    expect(params / 1e9).toBeLessThan(82);
    const q35 = parseModelConfig('x', presetConfigJson(findPreset('qwen3_5_moe', 'qwen3.5-35b-a3b')));
    expect(q35).toMatchObject({
      hfArchitecture: 'Qwen3_5MoeForConditionalGeneration', numLayers: 40, hiddenSize: 2048, headDim: 256, rotaryDim: 64, vocabSize: 248320, ropeTheta: 1e7,
      numExperts: 256, numExpertsPerTok: 8, normTopkProb: true, visionTowerIgnored: true, tieWordEmbeddings: false, gdn: { projLayout: 'split', numValueHeads: 32 },
    });
    expect([count(q35, 'gdn'), count(q35, 'gqa_gated')]).toEqual([30, 10]);
    // About 35B parameters in the text model (the vision tower, ~0.4B, is not counted).
    const q35Params = modelTensors(q35).reduce((s, t) => s + t.shape.reduce((a, b) => a * b, 1), 0);
    expect(q35Params / 1e9).toBeGreaterThan(33.5);
    expect(q35Params / 1e9).toBeLessThan(36);
    for (const p of [findPreset('qwen3_next', 'qwen3-next-80b-a3b'), findPreset('qwen3_5_moe', 'qwen3.5-35b-a3b')]) expect(p.weights).toBe('device');
  });

  it('names the choices for unknown arch or preset', () => {
    expect(() => findPreset('gpt2', 'tiny')).toThrow(/unknown architecture "gpt2": choose one of qwen3_moe, qwen3, llama, mixtral/);
    expect(() => findPreset('qwen3_moe', 'huge')).toThrow(/unknown preset "huge" for qwen3_moe: choose one of tiny, qwen3-30b-a3b/);
  });
});

describe('makeModel', () => {
  it('writes a deterministic HF checkpoint: same seed, same bytes; other seed, other weights', async () => {
    // A smaller vocabulary keeps the test fast; the tensor layout is the preset's.
    const small = { vocab_size: 4096, bos_token_id: 1, eos_token_id: 2 };
    const a = await makeModel({ arch: 'mixtral', preset: 'tiny', outDir: join(root, 'a'), seed: 3, overrides: small });
    const b = await makeModel({ arch: 'mixtral', preset: 'tiny', outDir: join(root, 'b'), seed: 3, overrides: small });
    const fa = await filesOf(a.dir);
    const fb = await filesOf(b.dir);
    expect([...fa.keys()]).toEqual(['afd-model.json', 'config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    for (const [name, bytes] of fa) expect(bytes.equals(fb.get(name)!), name).toBe(true);
    // (Other seeds give other weights: random.test.ts.)
    expect(a.residentBytes!.attention + a.residentBytes!.ffn).toBe(a.residentBytes!.colocated);
    expect(a.weightBytes).toBe(a.residentBytes!.colocated);
    const tokenizer = JSON.parse(fa.get('tokenizer.json')!.toString('utf8')) as { model: { vocab: Record<string, number> } };
    expect(Object.keys(tokenizer.model.vocab).length).toBeGreaterThan(150000);
    expect(JSON.parse(fa.get('config.json')!.toString('utf8'))).toMatchObject({ architectures: ['MixtralForCausalLM'], vocab_size: 4096, num_local_experts: 8 });
  }, 180_000);

  it('writes the tiny DeepSeek-V2 checkpoint for every role, and the full-size DeepSeek configs only', async () => {
    const r = await makeModel({ arch: 'deepseek_v2', preset: 'tiny', outDir: join(root, 'ds'), overrides: { vocab_size: 4096, bos_token_id: 1, eos_token_id: 2 } });
    expect(r.residentBytes!.attention + r.residentBytes!.ffn).toBe(r.residentBytes!.colocated);
    const ffn = (await buildLoadSpec(r.dir, 'ffn')).spec.tensors.map((t) => t.name);
    expect(ffn).toContain('model.layers.0.mlp.gate_proj.weight');
    expect(ffn).toContain('model.layers.1.mlp.shared_experts.up_proj.weight');
    expect((await buildLoadSpec(r.dir, 'attention')).spec.tensors.map((t) => t.name)).toContain('model.layers.3.self_attn.kv_b_proj.weight');
    await expect(makeModel({ arch: 'deepseek_v3', preset: 'deepseek-v3', outDir: join(root, 'v3') })).rejects.toThrow(/GiB of weights.*--config-only/);
    const v3 = await makeModel({ arch: 'deepseek_v3', preset: 'deepseek-v3', outDir: join(root, 'v3'), configOnly: true });
    expect(v3.files).not.toContain('model.safetensors');
    expect(JSON.parse(await readFile(join(v3.dir, 'config.json'), 'utf8'))).toMatchObject({ architectures: ['DeepseekV3ForCausalLM'], n_routed_experts: 256 });
  }, 180_000);

  it.each([
    ['qwen3_next', 'model.layers.0.linear_attn.in_proj_qkvz.weight', 'model.layers.3.self_attn.q_proj.weight'],
    ['qwen3_5_moe', 'model.language_model.layers.0.linear_attn.in_proj_qkv.weight', 'model.language_model.layers.3.self_attn.q_proj.weight'],
  ])('writes the tiny %s checkpoint: every tensor under its HF name and shape (Qwen3.5: experts fused, as published), loadable for every role', async (arch, gdnName, gatedName) => {
    const small = { vocab_size: 4096, bos_token_id: 1, eos_token_id: 2 };
    const r = await makeModel({ arch, preset: 'tiny', outDir: join(root, arch), overrides: small });
    expect(r.engineRefusal).toBeNull();
    const configJson = JSON.parse(await readFile(join(r.dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    const spec = parseModelConfig('config.json', configJson);
    expect(spec).toMatchObject({ arch, numLayers: 4, hiddenSize: 64, vocabSize: 4096, numExperts: 8, numExpertsPerTok: 2, gdn: { numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 16, valueHeadDim: 12, convKernel: 4 } });
    expect(spec.layers.map((l) => l.attention)).toEqual(['gdn', 'gdn', 'gdn', 'gqa_gated']);
    const header = await readSafetensorsHeader(join(r.dir, 'model.safetensors'));
    const written = new Map([...header.tensors].map(([name, t]) => [name, t.shape]));
    const expected = storedTensorPlans(familyRowOf(spec), spec, modelTensors(spec));
    expect(written.size).toBe(expected.length);
    for (const t of expected) expect(written.get(t.name), t.name).toEqual(t.shape);
    if (arch === 'qwen3_next') {
      expect(written.get('model.layers.2.mlp.experts.7.gate_proj.weight')).toEqual([24, 64]);
    } else {
      expect(written.get('model.language_model.layers.2.mlp.experts.gate_up_proj')).toEqual([8, 48, 64]);
      expect(written.get('model.language_model.layers.2.mlp.experts.down_proj')).toEqual([8, 64, 24]);
      expect([...written.keys()].some((n) => /experts\.\d+\./.test(n))).toBe(false);
    }
    // Hk 2 x Dk 16 = 32 key dims, Hv 4 x Dv 12 = 48 value dims; 4 heads of 16 with the gate = 128 q rows.
    expect(written.get(gdnName)).toEqual(arch === 'qwen3_next' ? [2 * 32 + 2 * 48, 64] : [2 * 32 + 48, 64]);
    expect(written.get(gatedName)).toEqual([128, 64]);
    expect(r.residentBytes!.attention + r.residentBytes!.ffn).toBe(r.residentBytes!.colocated);
    expect((await buildLoadSpec(r.dir, 'ffn')).spec.tensors.map((t) => t.name).filter((n) => n.endsWith('shared_expert_gate.weight'))).toHaveLength(4);
    // (1 + weight) norms are drawn around 0, the GDN gated norm and dt_bias around 1.
    const bytes = await readFile(join(r.dir, 'model.safetensors'));
    const mean = (name: string): number => {
      const t = header.tensors.get(name)!;
      let sum = 0;
      for (let i = 0; i < t.byteLength; i += 2) sum += fromBf16Bits(bytes.readUInt16LE(t.offset + i));
      return sum / (t.byteLength / 2);
    };
    const p = arch === 'qwen3_next' ? 'model.' : 'model.language_model.';
    expect(Math.abs(mean(`${p}norm.weight`))).toBeLessThan(0.05);
    expect(Math.abs(mean(`${p}layers.3.self_attn.q_norm.weight`))).toBeLessThan(0.05);
    expect(mean(`${p}layers.0.linear_attn.norm.weight`)).toBeCloseTo(1, 1);
    expect(mean(`${p}layers.0.linear_attn.dt_bias`)).toBeCloseTo(1, 1);
    const generation = JSON.parse(await readFile(join(r.dir, 'generation_config.json'), 'utf8')) as Record<string, unknown>;
    expect(generation).toMatchObject({ bos_token_id: 1, eos_token_id: [2] });
  }, 180_000);

  it('writes only the configs of the full-size hybrid presets', async () => {
    await expect(makeModel({ arch: 'qwen3_next', preset: 'qwen3-next-80b-a3b', outDir: join(root, 'next') })).rejects.toThrow(/GiB of weights.*--config-only/);
    const next = await makeModel({ arch: 'qwen3_next', preset: 'qwen3-next-80b-a3b', outDir: join(root, 'next'), configOnly: true });
    expect(next.files).not.toContain('model.safetensors');
    const q35 = await makeModel({ arch: 'qwen3_5_moe', preset: 'qwen3.5-35b-a3b', outDir: join(root, 'q35'), configOnly: true });
    const config = JSON.parse(await readFile(join(q35.dir, 'config.json'), 'utf8')) as { text_config: Record<string, unknown>; vision_config: Record<string, unknown> };
    expect(config.text_config).toMatchObject({ num_hidden_layers: 40, num_experts: 256 });
    expect(config.vision_config).toMatchObject({ depth: 27 });
  });

  it('shards large weights with an index the loader accepts', async () => {
    const r = await makeModel({ arch: 'qwen3', preset: 'tiny', outDir: join(root, 's'), maxShardBytes: 2 * 1024 * 1024, overrides: { vocab_size: 4096, bos_token_id: 1, eos_token_id: 2 } });
    expect(r.files).toContain('model.safetensors.index.json');
    const shards = r.files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f));
    expect(shards.length).toBeGreaterThan(1);
    const { spec } = await buildLoadSpec(r.dir, 'colocated');
    expect(spec.files.length).toBe(shards.length);
    const index = JSON.parse(await readFile(join(r.dir, 'model.safetensors.index.json'), 'utf8')) as { metadata: { total_size: number } };
    expect(index.metadata.total_size).toBe(r.weightBytes);
    const h = await readSafetensorsHeader(join(r.dir, shards[0]!));
    expect(h.metadata).toEqual({ format: 'pt' });
  }, 180_000);

  it('refuses to overwrite without --force, and never replaces a folder that is not a model', async () => {
    const out = join(root, 'm');
    await makeModel({ arch: 'qwen3', preset: 'tiny', outDir: out, configOnly: true });
    await expect(makeModel({ arch: 'qwen3', preset: 'tiny', outDir: out, configOnly: true })).rejects.toThrow(OutDirExistsError);
    await makeModel({ arch: 'qwen3', preset: 'tiny', outDir: out, configOnly: true, force: true, seed: 9 });
    expect(JSON.parse(await readFile(join(out, markerFileName), 'utf8'))).toMatchObject({ seed: 9, configOnly: true });
    const precious = join(root, 'precious');
    await mkdir(precious);
    await writeFile(join(precious, 'notes.txt'), 'keep me');
    await expect(makeModel({ arch: 'qwen3', preset: 'tiny', outDir: precious, force: true, configOnly: true })).rejects.toThrow(/refusing to replace it/);
    expect(await readFile(join(precious, 'notes.txt'), 'utf8')).toBe('keep me');
  });

  it('writes only the config of full-size presets, and explains why', async () => {
    await expect(makeModel({ arch: 'qwen3_moe', preset: 'qwen3-30b-a3b', outDir: join(root, 'big') })).rejects.toThrow(/GiB of weights.*--config-only/);
    const r = await makeModel({ arch: 'qwen3_moe', preset: 'qwen3-30b-a3b', outDir: join(root, 'big'), configOnly: true });
    expect(r.files).not.toContain('model.safetensors');
    expect(JSON.parse(await readFile(join(r.dir, 'config.json'), 'utf8'))).toMatchObject({ num_experts: 128, hidden_size: 2048 });
  });

  it('splits shards greedily and gives an oversized tensor its own shard', () => {
    const t = (name: string, n: number) => ({ name, dtype: 'bf16' as const, shape: [n] });
    const shards = planShards([t('a', 10), t('b', 10), t('c', 100), t('d', 5)], 48);
    expect(shards.map((s) => s.map((x) => x.name))).toEqual([['a', 'b'], ['c'], ['d']]);
  });

  it('rejects bad seeds', async () => {
    await expect(makeModel({ arch: 'qwen3', preset: 'tiny', outDir: join(root, 'x'), seed: -1 })).rejects.toThrow(/seed must be an integer/);
  });
});

describe('isStagingDirName', () => {
  it("names make-model's staging copies and nothing else", () => {
    expect(isStagingDirName('tiny-qwen3-moe.tmp-4242-0123456789ab')).toBe(true);
    expect(isStagingDirName('tiny-qwen3-moe')).toBe(false);
    expect(isStagingDirName('my.tmp-model')).toBe(false);
    expect(isStagingDirName('x.tmp-12-0123')).toBe(false);
  });
});
