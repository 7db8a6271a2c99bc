import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError } from './errors.js';
import { buildLoadSpec, residentBytesByRole } from './loadSpec.js';
import { indexFileName } from './shards.js';
import { tempDir, tinyQwen3MoeConfig, writeTestModel } from '../testing/checkpointTesting.js';
import { writeSafetensors } from './writer.js';

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function rejection(p: Promise<unknown>): Promise<CheckpointError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CheckpointError);
  return err as CheckpointError;
}

const names = (spec: { tensors: { name: string }[] }) => spec.tensors.map((t) => t.name);

describe('buildLoadSpec', () => {
  it('colocated loads every tensor; attention and ffn split them without overlap', async () => {
    const plans = await writeTestModel(dir, tinyQwen3MoeConfig());
    const co = await buildLoadSpec(dir, 'colocated');
    expect(names(co.spec).sort()).toEqual(plans.map((p) => p.name).sort());
    expect(co.spec.files).toEqual([join(dir, 'model.safetensors')]);
    const att = await buildLoadSpec(dir, 'attention');
    const ffn = await buildLoadSpec(dir, 'ffn');
    const a = new Set(names(att.spec));
    expect(names(ffn.spec).filter((n) => a.has(n))).toEqual([]);
    expect([...names(att.spec), ...names(ffn.spec)].sort()).toEqual(names(co.spec).sort());
    expect(att.residentBytes + ffn.residentBytes).toBe(co.residentBytes);
    // attention: embedding, norms, attention, LM head; ffn: experts, router, dense MLP
    expect(a.has('model.embed_tokens.weight') && a.has('lm_head.weight') && a.has('model.layers.0.post_attention_layernorm.weight')).toBe(true);
    expect(a.has('model.layers.0.self_attn.q_norm.weight')).toBe(true);
    expect(names(ffn.spec)).toContain('model.layers.0.mlp.gate.weight');
    expect(names(ffn.spec)).toContain('model.layers.1.mlp.down_proj.weight');
    expect(names(ffn.spec)).toContain('model.layers.2.mlp.experts.5.up_proj.weight');
    expect(ffn.spec.config.layers.map((l) => l.ffn)).toEqual(['moe', 'dense', 'moe']);
  });

  it('computeGateOnAttention moves the router weights to the attention role', async () => {
    await writeTestModel(dir, tinyQwen3MoeConfig());
    const att = await buildLoadSpec(dir, 'attention', { computeGateOnAttention: true });
    const ffn = await buildLoadSpec(dir, 'ffn', { computeGateOnAttention: true });
    expect(att.spec.computeGateOnAttention).toBe(true);
    expect(names(att.spec)).toContain('model.layers.2.mlp.gate.weight');
    expect(names(ffn.spec)).not.toContain('model.layers.2.mlp.gate.weight');
    const bytes = await residentBytesByRole(dir, { computeGateOnAttention: true });
    expect(bytes.attention).toBe(att.residentBytes);
    expect(bytes.attention + bytes.ffn).toBe(bytes.colocated);
  });

  it('gives byte ranges that hold exactly the written tensor bytes', async () => {
    await writeTestModel(dir, tinyQwen3MoeConfig());
    const { spec } = await buildLoadSpec(dir, 'colocated');
    const file = await readFile(spec.files[0]!);
    for (const t of spec.tensors) {
      expect(t.byteLength).toBe(t.shape.reduce((a, b) => a * b, 1) * 2);
      expect(t.offset + t.byteLength).toBeLessThanOrEqual(file.length);
    }
  });

  it('loads sharded checkpoints through the index and lists only the shards a role needs', async () => {
    await writeTestModel(dir, tinyQwen3MoeConfig(), { shards: 3 });
    const co = await buildLoadSpec(dir, 'colocated');
    expect(co.spec.files.length).toBe(3);
    const ffn = await buildLoadSpec(dir, 'ffn');
    for (const t of ffn.spec.tensors) expect(t.file).toBeLessThan(ffn.spec.files.length);
    const mapped = new Set(ffn.spec.tensors.map((t) => ffn.spec.files[t.file]));
    expect(mapped.size).toBe(ffn.spec.files.length);
  });

  it('reads Mixtral block_sparse_moe names and tied-embedding llama without lm_head', async () => {
    const mixtral = { ...tinyQwen3MoeConfig(), architectures: ['MixtralForCausalLM'], num_local_experts: 6, intermediate_size: 16 };
    await writeTestModel(dir, mixtral);
    const ffn = await buildLoadSpec(dir, 'ffn');
    expect(names(ffn.spec)).toContain('model.layers.1.block_sparse_moe.experts.5.w3.weight');
    expect(names(ffn.spec)).toContain('model.layers.1.block_sparse_moe.gate.weight');
    const llamaDir = await tempDir();
    try {
      await writeTestModel(llamaDir, { ...tinyQwen3MoeConfig(), architectures: ['LlamaForCausalLM'], tie_word_embeddings: true, attention_bias: true });
      const att = await buildLoadSpec(llamaDir, 'attention');
      expect(names(att.spec)).not.toContain('lm_head.weight');
      expect(names(att.spec)).toContain('model.layers.0.self_attn.o_proj.bias');
      expect(names(att.spec)).not.toContain('model.layers.0.self_attn.q_norm.weight');
      // A dense model has no router: the gate placement is ignored.
      expect((await buildLoadSpec(llamaDir, 'attention', { computeGateOnAttention: true })).spec.computeGateOnAttention).toBe(false);
    } finally {
      await rm(llamaDir, { recursive: true, force: true });
    }
  });

  it('names the role, tensor and file when a required tensor is missing (even one another role needs)', async () => {
    await writeTestModel(dir, tinyQwen3MoeConfig(), { omit: ['model.layers.2.mlp.experts.3.down_proj.weight'] });
    const err = await rejection(buildLoadSpec(dir, 'attention'));
    expect(err.tensor).toBe('model.layers.2.mlp.experts.3.down_proj.weight');
    expect(err.message).toMatch(/model\.safetensors: tensor model\.layers\.2\.mlp\.experts\.3\.down_proj\.weight: is required by the .* role but missing/);
  });

  it('names file, tensor and both shapes on a shape mismatch', async () => {
    await writeTestModel(dir, tinyQwen3MoeConfig(), { reshape: { 'model.layers.0.self_attn.k_proj.weight': [32, 24] } });
    const err = await rejection(buildLoadSpec(dir, 'colocated'));
    expect(err.message).toContain('model.safetensors: tensor model.layers.0.self_attn.k_proj.weight: has shape [32, 24] but config.json needs [16, 24] (num_key_value_heads x head_dim, hidden_size)');
  });

  it('explains the fused-expert layout', async () => {
    await writeFile(join(dir, 'config.json'), JSON.stringify(tinyQwen3MoeConfig()));
    await writeSafetensors(join(dir, 'model.safetensors'), [{ name: 'model.layers.0.mlp.experts.gate_up_proj', dtype: 'bf16', shape: [6, 32, 24] }], () => new Uint8Array(6 * 32 * 24 * 2));
    const err = await rejection(buildLoadSpec(dir, 'colocated'));
    expect(err.message).toMatch(/experts fused/);
  });

  it('rejects an index entry whose shard is missing or does not hold the tensor', async () => {
    await writeTestModel(dir, tinyQwen3MoeConfig(), { shards: 2 });
    const indexPath = join(dir, indexFileName);
    const index = JSON.parse(await readFile(indexPath, 'utf8')) as { weight_map: Record<string, string> };
    const good = structuredClone(index);
    index.weight_map['model.norm.weight'] = 'model-00009-of-00009.safetensors';
    await writeFile(indexPath, JSON.stringify(index));
    expect((await rejection(buildLoadSpec(dir, 'colocated'))).message).toMatch(/shard model-00009-of-00009\.safetensors listed in weight_map does not exist/);
    const swapped = structuredClone(good);
    swapped.weight_map['model.embed_tokens.weight'] = 'model-00002-of-00002.safetensors';
    await writeFile(indexPath, JSON.stringify(swapped));
    const err = await rejection(buildLoadSpec(dir, 'colocated'));
    expect(err.message).toMatch(/weight_map puts this tensor in model-00002-of-00002\.safetensors, but that shard does not contain it/);
    expect(err.tensor).toBe('model.embed_tokens.weight');
  });

  it('rejects malformed indexes and shard names outside the directory', async () => {
    await writeTestModel(dir, tinyQwen3MoeConfig());
    const indexPath = join(dir, indexFileName);
    await writeFile(indexPath, '{"weight_map": ');
    expect((await rejection(buildLoadSpec(dir, 'colocated'))).message).toMatch(/cannot read the shard index/);
    await writeFile(indexPath, JSON.stringify({ weight_map: { 'model.norm.weight': '../model.safetensors' } }));
    expect((await rejection(buildLoadSpec(dir, 'colocated'))).message).toMatch(/not a plain file name/);
    await writeFile(indexPath, JSON.stringify({ metadata: {} }));
    expect((await rejection(buildLoadSpec(dir, 'colocated'))).message).toMatch(/weight_map is missing/);
  });

  it('explains a directory without safetensors, with .bin files, or without config.json', async () => {
    await writeFile(join(dir, 'config.json'), JSON.stringify(tinyQwen3MoeConfig()));
    expect((await rejection(buildLoadSpec(dir, 'colocated'))).message).toMatch(/no model\.safetensors or model\.safetensors\.index\.json .*download the model weights/);
    await writeFile(join(dir, 'pytorch_model.bin'), 'x');
    expect((await rejection(buildLoadSpec(dir, 'colocated'))).message).toMatch(/PyTorch \.bin checkpoints are not supported/);
    await rm(join(dir, 'config.json'));
    expect((await rejection(buildLoadSpec(dir, 'colocated'))).message).toMatch(/config\.json: cannot read/);
    await writeFile(join(dir, 'config.json'), '{');
    expect((await rejection(buildLoadSpec(dir, 'colocated'))).message).toMatch(/config\.json: not valid JSON/);
    expect((await rejection(buildLoadSpec(join(dir, 'nope'), 'colocated'))).message).toMatch(/cannot read/);
  });

  it('a corrupt shard is a clear error, not a crash', async () => {
    await writeTestModel(dir, tinyQwen3MoeConfig());
    const path = join(dir, 'model.safetensors');
    const bytes = await readFile(path);
    await writeFile(path, bytes.subarray(0, bytes.length - 100));
    expect((await rejection(buildLoadSpec(dir, 'ffn'))).message).toMatch(/reach past the end of the data/);
  });
});
