/**
 * Qwen3-Next and Qwen3.5-MoE in the engine (CPU), every layer full attention (the Gated
 * DeltaNet layers are not built yet): (1 + weight) RMSNorm, gated attention, partial RoPE
 * and the sigmoid-gated shared expert against the float64 reference over a prefill and
 * greedy decode steps; Qwen3.5-MoE from fused expert tensors; the attention / FFN role
 * split against colocated.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { roleLoadSpec } from './checkpoint/loadSpec.js';
import type { ModelLoadSpec } from './modelSpec.js';
import { tempDir, writeTestModel } from './testing/checkpointTesting.js';
import { relErr } from './testing/engineReference.js';
import { testEngines } from './testing/testEngines.js';
import { expectFfnForwardEqual } from './testing/ffnForwardCheck.js';
import { qwen3NextReferenceLogits } from './testing/engineReferenceQwen3Next.js';
import { generateGreedy, roleSpec, scatteredBlocks, tinyHybridConfigs } from './testing/engineTesting.js';

const opts = { threads: 2, kvBlockSize: 4, numKvBlocks: 31 };
const { load, dirs } = testEngines();

const next = tinyHybridConfigs['qwen3_next']!;
const q35 = tinyHybridConfigs['qwen3_5_moe']!;
const q35Text = q35['text_config'] as Record<string, unknown>;
/** The tiny hybrid configs with every layer full attention (Qwen3-Next keeps its dense layer 2). */
const fullAttention: Record<string, { config: Record<string, unknown>; asPublished: boolean }> = {
  qwen3_next: { config: { ...next, full_attention_interval: 1 }, asPublished: false },
  qwen3_5_moe: { config: { ...q35, text_config: { ...q35Text, layer_types: ['full_attention', 'full_attention', 'full_attention'] } }, asPublished: true },
};

async function writeModel(arch: string, seed: number): Promise<string> {
  const dir = await tempDir(`afd-${arch}-full-`);
  dirs.push(dir);
  const { config, asPublished } = fullAttention[arch]!;
  await writeTestModel(dir, config, { seed, asPublished });
  return dir;
}

function argmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
  return best;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const prompt = [3, 17, 5, 9, 1, 30, 12];

describe.each(Object.keys(fullAttention))('%s, all layers full attention', (arch) => {
  it('loads the hybrid features the test is about', async () => {
    const spec: ModelLoadSpec = await roleSpec(await writeModel(arch, 1), 'colocated');
    const c = spec.config;
    expect(c.normUnitOffset).toBe(true);
    expect(c.rotaryDim).toBeLessThan(c.headDim);
    expect(c.layers.every((k) => k.attention === 'gqa_gated')).toBe(true);
    expect(c.layers.some((k) => k.ffn === 'moe+gated_shared')).toBe(true);
    expect(spec.tensors.some((t) => t.slot === 'ffn.shared_expert_gate')).toBe(true);
    // Qwen3.5-MoE's experts come from the fused gate_up_proj / down_proj tensors.
    expect(spec.tensors.some((t) => t.name.includes('gate_up_proj'))).toBe(arch === 'qwen3_5_moe');
  });

  it('prefill and greedy decode logits match the float64 reference, tokens equal', async () => {
    const spec = await roleSpec(await writeModel(arch, 2), 'colocated');
    const engine = await load(spec, opts);
    const out = await generateGreedy(engine, prompt, 6, { blocks: scatteredBlocks(4, 1, 31) });
    const seq = [...prompt];
    for (let i = 0; i < out.tokens.length; i++) {
      const ref = qwen3NextReferenceLogits(spec, seq).at(-1)!;
      expect(maxAbsDiff(out.logits[i]!, ref)).toBeLessThan(1e-3);
      expect(relErr(out.logits[i]!, ref)).toBeLessThan(1e-4);
      expect(out.tokens[i]).toBe(argmax(ref));
      seq.push(out.tokens[i]!);
    }
  });

  it('chunked prefill and token-by-token decode equal one whole prefill', async () => {
    const engine = await load(await writeModel(arch, 3), opts);
    const whole = await generateGreedy(engine, prompt, 4, { blocks: [0, 1, 2, 3] });
    const chunked = await generateGreedy(engine, prompt, 4, { chunk: 3, blocks: scatteredBlocks(4, 2, 31) });
    expect(chunked.tokens).toEqual(whole.tokens);
    for (let i = 0; i < whole.logits.length; i++) expect(relErr(chunked.logits[i]!, whole.logits[i]!)).toBeLessThan(1e-5);
  });

  it.each([false, true])('attention + ffn engines give the colocated tokens and logits (gate on attention: %s)', async (gateOnAttention) => {
    const dir = await writeModel(arch, 4);
    const colocated = await load(dir, opts);
    const attention = await load(dir, { ...opts, role: 'attention', computeGateOnAttention: gateOnAttention });
    const ffn = await load(dir, { ...opts, role: 'ffn', computeGateOnAttention: gateOnAttention });
    // The shared expert's gate is part of the FFN half.
    expect(ffn.spec.tensors.some((t) => t.slot === 'ffn.shared_expert_gate')).toBe(true);
    expect(attention.spec.tensors.some((t) => t.slot === 'ffn.shared_expert_gate')).toBe(false);
    attention.attachFfn(ffn);
    const ref = await generateGreedy(colocated, prompt, 4, { blocks: [0, 1, 2, 3] });
    const split = await generateGreedy(attention, prompt, 4, { blocks: [0, 1, 2, 3] });
    expect(split.tokens).toEqual(ref.tokens);
    for (let i = 0; i < ref.logits.length; i++) expect(split.logits[i]).toEqual(ref.logits[i]);
  });

  it('ffnForward of the ffn role equals the colocated FFN half on every layer', async () => {
    const dir = await writeModel(arch, 5);
    const colocated = await load(dir, opts);
    const ffn = await load(dir, { ...opts, role: 'ffn' });
    await expectFfnForwardEqual(colocated, ffn);
  });

  it('a config-only directory serves with --load-format dummy ((1 + weight) norms generated); split roles equal colocated', async () => {
    const dir = await tempDir(`afd-${arch}-dummy-`);
    dirs.push(dir);
    await writeFile(join(dir, 'config.json'), JSON.stringify(fullAttention[arch]!.config));
    const spec = async (role: 'colocated' | 'attention' | 'ffn') => (await roleLoadSpec(dir, role, { loadFormat: 'dummy', seed: 5 })).spec;
    const colocated = await load(await spec('colocated'), opts);
    const attention = await load(await spec('attention'), opts);
    attention.attachFfn(await load(await spec('ffn'), opts));
    const ref = await generateGreedy(colocated, prompt, 4, { blocks: [0, 1, 2, 3] });
    const split = await generateGreedy(attention, prompt, 4, { blocks: [0, 1, 2, 3] });
    expect(split.tokens).toEqual(ref.tokens);
    for (let i = 0; i < ref.logits.length; i++) expect(split.logits[i]).toEqual(ref.logits[i]);
    expect(ref.logits[0]!.every((v) => Number.isFinite(v))).toBe(true);
    expect(ref.logits[0]!.some((v) => v !== ref.logits[0]![0])).toBe(true);
  });
});
