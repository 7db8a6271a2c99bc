import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mkdtemp } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildLoadSpec, parseModelConfig, readSafetensorsHeader } from '@afd/native/checkpoint';
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
