/**
 * Test helpers: write small HuggingFace model directories (config.json + safetensors,
 * single or sharded) with deterministic random bf16 weights, and raw safetensors files
 * with hand-made headers for the validation tests.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseModelConfig } from '../checkpoint/config.js';
import { normalBf16 } from '../checkpoint/random.js';
import { indexFileName, singleFileName } from '../checkpoint/shards.js';
import { familyRowOf } from '../checkpoint/families.js';
import { storedTensorPlans } from '../checkpoint/fusedExperts.js';
import { modelTensors } from '../checkpoint/tensorTables.js';
import { tensorByteLength, writeSafetensors, type TensorPlan } from '../checkpoint/writer.js';

/** A small qwen3_moe config.json: GQA 4/2 heads, 6 experts top-2, layer 1 dense. */
export function tinyQwen3MoeConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: ['Qwen3MoeForCausalLM'],
    model_type: 'qwen3_moe',
    vocab_size: 64,
    hidden_size: 24,
    intermediate_size: 40,
    num_hidden_layers: 3,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    num_experts: 6,
    num_experts_per_tok: 2,
    moe_intermediate_size: 16,
    norm_topk_prob: true,
    decoder_sparse_step: 1,
    mlp_only_layers: [1],
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 512,
    tie_word_embeddings: false,
    eos_token_id: 2,
    ...overrides,
  };
}

/** A fresh temporary directory. */
export function tempDir(prefix = 'afd-ckpt-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Options of writeTestModel. */
export interface TestModelOptions {
  /** Split tensors over this many shards with an index (default 1: model.safetensors). */
  shards?: number;
  /** Drop these tensors from the safetensors files. */
  omit?: string[];
  /** Replace the shape of these tensors. */
  reshape?: Record<string, number[]>;
  seed?: number;
  /** Store the tensors as the family's published checkpoints do (storedTensorPlans: Qwen3.5-MoE's fused experts). */
  asPublished?: boolean;
}

/** Write config.json + weights for a config object into `dir`; returns the tensor plans written. */
export async function writeTestModel(dir: string, config: Record<string, unknown>, opts: TestModelOptions = {}): Promise<TensorPlan[]> {
  await writeFile(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  const spec = parseModelConfig('config.json', config);
  const tensors = opts.asPublished ? storedTensorPlans(familyRowOf(spec), spec, modelTensors(spec)) : modelTensors(spec);
  const plans: TensorPlan[] = tensors
    .filter((t) => !(opts.omit ?? []).includes(t.name))
    .map((t) => ({ name: t.name, dtype: 'bf16', shape: opts.reshape?.[t.name] ?? t.shape }));
  const fill = (t: TensorPlan): Uint8Array => normalBf16(opts.seed ?? 1, t.name, tensorByteLength(t) / 2, { mean: 0, std: 0.1 });
  const shards = opts.shards ?? 1;
  if (shards === 1) {
    await writeSafetensors(join(dir, singleFileName), plans, fill);
    return plans;
  }
  const per = Math.ceil(plans.length / shards);
  const weightMap: Record<string, string> = {};
  for (let s = 0; s < shards; s++) {
    const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = plans.slice(s * per, (s + 1) * per);
    for (const t of part) weightMap[t.name] = name;
    await writeSafetensors(join(dir, name), part, fill);
  }
  await writeFile(join(dir, indexFileName), JSON.stringify({ metadata: {}, weight_map: weightMap }, null, 2));
  return plans;
}

/** Write a raw safetensors file: a header (object or literal text) and `dataBytes` zero bytes. */
export async function writeRawSafetensors(path: string, header: unknown, dataBytes: number, opts: { headerLength?: bigint } = {}): Promise<void> {
  const text = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(opts.headerLength ?? BigInt(text.length));
  await writeFile(path, Buffer.concat([len, text, Buffer.alloc(dataBytes)]));
}
