import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelInspectResultSchema } from '@afd/shared';
import { makeModel } from './makeModel.js';
import { CONFIG_ONLY_REASON, inspectModelDir, VISION_IGNORED_NOTE } from './inspectModel.js';

let root: string;
let modelDir: string;
const small = { vocab_size: 4096, bos_token_id: 1, eos_token_id: 2 };

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'afd-inspect-'));
  modelDir = (await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: join(root, 'ok'), overrides: small })).dir;
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('inspectModelDir', () => {
  it('reports a servable checkpoint: architecture, size, weights, tokenizer and every role', async () => {
    const r = modelInspectResultSchema.parse(await inspectModelDir(modelDir));
    expect(r).toMatchObject({ status: 'ready', reason: null, roles: ['colocated', 'attention', 'ffn'], tokenizer: { present: true, chatTemplate: true } });
    expect(r.config).toMatchObject({ architecture: 'Qwen3MoeForCausalLM', family: 'qwen3_moe', vocabSize: 4096 });
    expect(r.weights.present).toBe(true);
    expect(r.weights.files).toBe(1);
    // bf16 weights: 2 bytes per parameter, and the two halves add up to the whole.
    const b = r.config!.roleBytes;
    expect(b.colocated).toBe(r.config!.parameters * 2);
    expect(b.attention + b.ffn).toBe(b.colocated);
    expect(r.weights.bytes).toBeGreaterThan(b.colocated); // plus the safetensors header
  });

  it('reports a config-only directory as needing load format dummy, with the config size and no weights', async () => {
    const dir = (await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: join(root, 'config-only'), configOnly: true, overrides: small })).dir;
    const r = await inspectModelDir(dir);
    expect(r.status).toBe('config-only');
    expect(r.reason).toBe(CONFIG_ONLY_REASON);
    expect(r.reason).toMatch(/^config only: needs load format dummy/);
    expect(r.weights).toEqual({ present: false, files: 0, bytes: 0 });
    expect(r.config!.parameters).toBeGreaterThan(0);
    expect(r.config!.roleBytes.colocated).toBe(r.config!.parameters * 2);
    expect(r.roles).toEqual(['colocated', 'attention', 'ffn']);
  });

  it('refuses what is not a model directory, saying why', async () => {
    expect(await inspectModelDir('/models/does-not-exist')).toMatchObject({ status: 'refused', reason: '/models/does-not-exist does not exist on this host', roles: [] });
    expect((await inspectModelDir(join(modelDir, 'config.json'))).reason).toMatch(/is a file, not a model directory/);
    expect((await inspectModelDir(root)).reason).toMatch(/has no config\.json/);
  });

  it('refuses an unsupported architecture and weights that disagree with config.json', async () => {
    const bad = (await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: join(root, 'bad'), overrides: small })).dir;
    const config = JSON.parse(await readFile(join(bad, 'config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(bad, 'config.json'), JSON.stringify({ ...config, hidden_size: 96 }));
    const mismatch = await inspectModelDir(bad);
    expect(mismatch.status).toBe('refused');
    expect(mismatch.reason).toMatch(/has shape .* but config\.json needs/);
    expect(mismatch.config?.hiddenSize).toBe(96);
    await writeFile(join(bad, 'config.json'), JSON.stringify({ ...config, architectures: ['GPT2LMHeadModel'] }));
    expect((await inspectModelDir(bad)).reason).toMatch(/architecture GPT2LMHeadModel is not supported/);
  });

  it('reads every architecture make-model writes (DeepSeek-V2 with MLA and a dense layer too)', async () => {
    const dir = (await makeModel({ arch: 'deepseek_v2', preset: 'tiny', outDir: join(root, 'deepseek') })).dir;
    const r = await inspectModelDir(dir);
    expect(r).toMatchObject({ status: 'ready', reason: null, roles: ['colocated', 'attention', 'ffn'] });
    expect(r.config).toMatchObject({ family: 'deepseek_v2' });
    expect(r.config!.roleBytes.attention + r.config!.roleBytes.ffn).toBe(r.config!.roleBytes.colocated);
  });

  it('reads a Qwen3-Next checkpoint whole and serves it on every role (Gated DeltaNet layers included)', async () => {
    const dir = (await makeModel({ arch: 'qwen3_next', preset: 'tiny', outDir: join(root, 'next'), overrides: small })).dir;
    const r = modelInspectResultSchema.parse(await inspectModelDir(dir));
    expect(r).toMatchObject({ status: 'ready', reason: null, roles: ['colocated', 'attention', 'ffn'], weights: { present: true, files: 1 }, tokenizer: { present: true } });
    expect(r.config).toMatchObject({ architecture: 'Qwen3NextForCausalLM', family: 'qwen3_next', numLayers: 4, numExperts: 8, linearAttentionLayers: 3 });
    expect(r.config!.roleBytes.attention + r.config!.roleBytes.ffn).toBe(r.config!.roleBytes.colocated);
    // A broken checkpoint of the family says what is broken first.
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, linear_value_head_dim: 10 }));
    expect((await inspectModelDir(dir)).reason).toMatch(/linear_attn.*has shape .* but config\.json needs/);
  });

  it('says a Qwen3.5-MoE checkpoint is text only: the vision tower is ignored', async () => {
    const dir = (await makeModel({ arch: 'qwen3_5_moe', preset: 'tiny', outDir: join(root, 'q35'), overrides: small })).dir;
    const r = await inspectModelDir(dir);
    expect(r.status).toBe('ready');
    expect(r.reason).toBe(VISION_IGNORED_NOTE);
    expect(VISION_IGNORED_NOTE).toMatch(/vision tower .* is ignored/);
    const configOnly = (await makeModel({ arch: 'qwen3_5_moe', preset: 'qwen3.5-35b-a3b', outDir: join(root, 'q35-full'), configOnly: true })).dir;
    const full = await inspectModelDir(configOnly);
    expect(full).toMatchObject({ config: { family: 'qwen3_5_moe', numLayers: 40, vocabSize: 248320 } });
    expect(full.reason).toContain(VISION_IGNORED_NOTE);
  });

  it('limits a directory without a tokenizer to FFN ranks', async () => {
    const dir = (await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: join(root, 'no-tok'), overrides: small })).dir;
    await rm(join(dir, 'tokenizer.json'));
    const r = await inspectModelDir(dir);
    expect(r).toMatchObject({ status: 'ready', roles: ['ffn'], tokenizer: { present: false } });
    expect(r.reason).toMatch(/only FFN ranks/);
  });
});
