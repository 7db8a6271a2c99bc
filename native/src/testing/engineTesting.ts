/**
 * Test helpers for the engine: tiny model directories for every architecture (odd sizes,
 * GQA), a greedy generation loop over the step API, and block tables with scattered ids.
 */
import { buildStepPlan, type PlanSeq, type StepPlan, type StepResult } from '@afd/shared';
import { buildLoadSpec } from '../checkpoint/loadSpec.js';
import { tempDir, tinyQwen3MoeConfig, writeTestModel } from './checkpointTesting.js';
import type { Engine } from '../engine.js';
import type { ModelLoadSpec, ModelRole } from '../modelSpec.js';

/** config.json objects of tiny models, one per supported architecture. */
export const tinyConfigs: Record<string, Record<string, unknown>> = {
  qwen3_moe: tinyQwen3MoeConfig(),
  qwen3: {
    architectures: ['Qwen3ForCausalLM'],
    vocab_size: 61,
    hidden_size: 20,
    intermediate_size: 36,
    num_hidden_layers: 2,
    num_attention_heads: 5,
    num_key_value_heads: 1,
    head_dim: 6,
    rope_theta: 1000,
    max_position_embeddings: 256,
    tie_word_embeddings: true,
  },
  llama: {
    architectures: ['LlamaForCausalLM'],
    vocab_size: 57,
    hidden_size: 36,
    intermediate_size: 44,
    num_hidden_layers: 2,
    num_attention_heads: 6,
    num_key_value_heads: 3,
    attention_bias: true,
    rms_norm_eps: 1e-5,
    max_position_embeddings: 256,
  },
  mixtral: {
    architectures: ['MixtralForCausalLM'],
    vocab_size: 50,
    hidden_size: 20,
    intermediate_size: 18,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    num_local_experts: 5,
    num_experts_per_tok: 2,
    sliding_window: null,
    max_position_embeddings: 256,
  },
  // DeepSeek-V2-Lite layout: q_lora null, layer 0 dense, softmax greedy, 2 shared experts.
  deepseek_v2: {
    architectures: ['DeepseekV2ForCausalLM'],
    vocab_size: 53,
    hidden_size: 30,
    intermediate_size: 34,
    moe_intermediate_size: 10,
    num_hidden_layers: 3,
    num_attention_heads: 3,
    q_lora_rank: null,
    kv_lora_rank: 14,
    qk_nope_head_dim: 6,
    qk_rope_head_dim: 4,
    v_head_dim: 5,
    n_routed_experts: 7,
    n_shared_experts: 2,
    num_experts_per_tok: 2,
    first_k_dense_replace: 1,
    topk_method: 'greedy',
    routed_scaling_factor: 1.25,
    max_position_embeddings: 256,
  },
  // DeepSeek-V3 layout: q_lora, noaux_tc sigmoid with the score bias over 3 groups, yarn with mscale.
  deepseek_v3: {
    architectures: ['DeepseekV3ForCausalLM'],
    vocab_size: 47,
    hidden_size: 28,
    intermediate_size: 30,
    moe_intermediate_size: 8,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    q_lora_rank: 12,
    kv_lora_rank: 10,
    qk_nope_head_dim: 4,
    qk_rope_head_dim: 6,
    v_head_dim: 7,
    n_routed_experts: 9,
    n_shared_experts: 1,
    num_experts_per_tok: 3,
    n_group: 3,
    topk_group: 2,
    first_k_dense_replace: 1,
    max_position_embeddings: 256,
    rope_scaling: { type: 'yarn', factor: 4, original_max_position_embeddings: 64, mscale: 1, mscale_all_dim: 0.8 },
  },
};

/**
 * config.json objects of tiny hybrid Gated DeltaNet models (Qwen3-Next, Qwen3.5-MoE): kept
 * apart from tinyConfigs, whose suites drive engines without state slots; the tests that
 * load these give each sequence a slot (StepPlan.stateSlots).
 */
export const tinyHybridConfigs: Record<string, Record<string, unknown>> = {
  // Qwen3-Next layout: layer_types from full_attention_interval 2 (linear, full, linear, full),
  // layer 2 a dense MLP (mlp_only_layers), partial RoPE 1/2, Hk 2 / Hv 4 linear heads.
  qwen3_next: {
    architectures: ['Qwen3NextForCausalLM'],
    model_type: 'qwen3_next',
    vocab_size: 43,
    hidden_size: 24,
    intermediate_size: 11,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    partial_rotary_factor: 0.5,
    full_attention_interval: 2,
    linear_num_key_heads: 2,
    linear_num_value_heads: 4,
    linear_key_head_dim: 6,
    linear_value_head_dim: 5,
    linear_conv_kernel_dim: 3,
    num_experts: 5,
    num_experts_per_tok: 2,
    moe_intermediate_size: 7,
    shared_expert_intermediate_size: 9,
    mlp_only_layers: [2],
    max_position_embeddings: 256,
  },
  // Qwen3.5-MoE layout: the text model in text_config (explicit layer_types), a vision tower that is ignored.
  qwen3_5_moe: {
    architectures: ['Qwen3_5MoeForConditionalGeneration'],
    model_type: 'qwen3_5_moe',
    tie_word_embeddings: true,
    text_config: {
      model_type: 'qwen3_5_moe_text',
      vocab_size: 41,
      hidden_size: 20,
      num_hidden_layers: 3,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 12,
      layer_types: ['linear_attention', 'full_attention', 'linear_attention'],
      rope_parameters: { rope_type: 'default', rope_theta: 1000, partial_rotary_factor: 0.5, mrope_section: [1, 1, 1], mrope_interleaved: true },
      linear_num_key_heads: 1,
      linear_num_value_heads: 3,
      linear_key_head_dim: 4,
      linear_value_head_dim: 6,
      linear_conv_kernel_dim: 4,
      num_experts: 6,
      num_experts_per_tok: 3,
      moe_intermediate_size: 5,
      shared_expert_intermediate_size: 7,
      max_position_embeddings: 256,
    },
    vision_config: { depth: 2, hidden_size: 16, model_type: 'qwen3_5_moe' },
  },
};

/** Writes the tiny model of `arch` into a fresh temp dir and returns the dir. */
export async function writeTinyModel(arch: string, seed = 1): Promise<string> {
  const dir = await tempDir(`afd-engine-${arch}-`);
  await writeTestModel(dir, tinyConfigs[arch] ?? tinyHybridConfigs[arch]!, { seed });
  return dir;
}

/** The load spec of one role of a model dir. */
export async function roleSpec(dir: string, role: ModelRole, computeGateOnAttention = false): Promise<ModelLoadSpec> {
  return (await buildLoadSpec(dir, role, { computeGateOnAttention })).spec;
}

/** Block ids for a sequence: `count` ids taken from a scattered permutation. */
export function scatteredBlocks(count: number, salt: number, numBlocks: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((i * 7 + salt * 13 + 5) % numBlocks);
  if (new Set(out).size !== out.length) throw new Error('scatteredBlocks: ids collide; use a prime numBlocks');
  return out;
}

/**
 * The step plan of one sequence, with its recurrent-state slot when the model has gdn
 * layers (engine.info.numStateSlots > 0: every step names one; a step at position 0
 * starts the slot fresh); models without gdn layers get no stateSlots.
 */
export function singleSeqPlan(engine: Engine, seq: PlanSeq, stateSlot = 0): StepPlan {
  const plan = buildStepPlan([seq], { returnLogits: true });
  if (engine.info.numStateSlots > 0) plan.stateSlots = Int32Array.of(stateSlot);
  return plan;
}

/**
 * Greedy generation through the step API: prefill in chunks of `chunk`, then decode.
 * `start`: the prompt's first `start` tokens are already in the KV cache (in the first
 * blocks of `blocks`, written by another sequence: a reused prefix), so prefill begins there.
 * `stateSlot`: the recurrent-state slot of a gdn model (default 0; ignored without gdn layers).
 */
export async function generateGreedy(
  engine: Engine,
  prompt: readonly number[],
  maxNewTokens: number,
  opts: { chunk?: number; blocks: readonly number[]; start?: number; stateSlot?: number },
): Promise<{ tokens: number[]; logits: Float32Array[] }> {
  const chunk = opts.chunk ?? prompt.length;
  const tokens: number[] = [];
  const logits: Float32Array[] = [];
  let cached = opts.start ?? 0;
  let last: StepResult | undefined;
  while (cached < prompt.length) {
    const ids = prompt.slice(cached, cached + chunk);
    const seq: PlanSeq = { tokenIds: ids, numCached: cached, blockTable: opts.blocks, sample: cached + ids.length === prompt.length };
    last = await engine.step(singleSeqPlan(engine, seq, opts.stateSlot));
    cached += ids.length;
  }
  for (let i = 0; i < maxNewTokens; i++) {
    const tok = last!.tokenIds[0]!;
    tokens.push(tok);
    logits.push(last!.logits!);
    if (i + 1 === maxNewTokens) break;
    last = await engine.step(singleSeqPlan(engine, { tokenIds: [tok], numCached: cached, blockTable: opts.blocks }, opts.stateSlot));
    cached += 1;
  }
  return { tokens, logits };
}

/**
 * Teacher forcing: prefill `prompt`, then feed `forced` one token per step; logits[s] is
 * the distribution that chose forced[s] in the reference (the step after forced[s - 1]).
 * A gdn model's steps name recurrent-state slot `stateSlot` (default 0).
 */
export async function forcedLogits(
  engine: Engine,
  prompt: readonly number[],
  forced: readonly number[],
  opts: { blocks: readonly number[]; stateSlot?: number },
): Promise<Float32Array[]> {
  const logits: Float32Array[] = [];
  let last = await engine.step(singleSeqPlan(engine, { tokenIds: prompt, numCached: 0, blockTable: opts.blocks }, opts.stateSlot));
  let cached = prompt.length;
  for (let s = 0; s < forced.length; s++) {
    logits.push(last.logits!);
    if (s + 1 === forced.length) break;
    last = await engine.step(singleSeqPlan(engine, { tokenIds: [forced[s]!], numCached: cached, blockTable: opts.blocks }, opts.stateSlot));
    cached += 1;
  }
  return logits;
}

/** Arg-max (lowest id on ties) and the top-1 minus top-2 gap of a logit row. */
export function top2(row: Float32Array): { argmax: number; margin: number } {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  let second = -Infinity;
  for (let i = 0; i < row.length; i++) if (i !== best && row[i]! > second) second = row[i]!;
  return { argmax: best, margin: row[best]! - second };
}

/** Copies a single-file model dir, storing every tensor as `dtype` (values converted exactly where representable). */
export async function convertModelDtype(srcDir: string, dtype: 'f32' | 'f16'): Promise<string> {
  const { readFile, writeFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const { writeSafetensors } = await import('../checkpoint/writer.js');
  const { readSpecWeights } = await import('./engineReference.js');
  const spec = await roleSpec(srcDir, 'colocated');
  const weights = readSpecWeights(spec);
  const dir = await tempDir(`afd-engine-${dtype}-`);
  await writeFile(join(dir, 'config.json'), await readFile(join(srcDir, 'config.json')));
  const plans = spec.tensors.map((t) => ({ name: t.name, dtype, shape: t.shape }));
  await writeSafetensors(join(dir, 'model.safetensors'), plans, (t) => {
    const v = weights.get(t.name)!.data;
    if (dtype === 'f32') return new Uint8Array(Float32Array.from(v).buffer);
    const h = new Uint16Array(v.length);
    for (let i = 0; i < v.length; i++) h[i] = toF16Bits(v[i]!);
    return new Uint8Array(h.buffer);
  });
  return dir;
}

function toF16Bits(x: number): number {
  const f = new Float32Array([x]);
  const b = new Uint32Array(f.buffer)[0]!;
  const sign = (b >>> 16) & 0x8000;
  const exp = ((b >>> 23) & 0xff) - 127 + 15;
  const mant = b & 0x7fffff;
  if (exp <= 0) return sign; // tiny values flush to zero (test weights are ~N(0, 0.1))
  if (exp >= 31) return sign | 0x7c00;
  let h = (exp << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h;
}
