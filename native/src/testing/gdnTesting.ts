/**
 * Tiny Qwen3-Next / Qwen3.5-MoE checkpoints with Gated DeltaNet layers and the lockstep
 * generation that drives them with a state slot per sequence (StepPlan.stateSlots): shared
 * by the CPU engine tests (engine.gdn.test.ts) and the GPU suite's gdn group.
 */
import { buildStepPlan, type StepPlan } from '@afd/shared';
import type { Engine } from '../engine.js';
import { tempDir, writeTestModel } from './checkpointTesting.js';

/** The shapes of make-model's tiny hybrid presets (agent/src/model/hybridPresets.ts) with a small vocabulary: layers linear, linear, linear, full. */
export const tinyHybrid = {
  vocab_size: 89,
  hidden_size: 64,
  num_hidden_layers: 4,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  linear_num_key_heads: 2,
  linear_num_value_heads: 4,
  linear_key_head_dim: 16,
  linear_value_head_dim: 12,
  linear_conv_kernel_dim: 4,
  num_experts: 8,
  num_experts_per_tok: 2,
  moe_intermediate_size: 24,
  shared_expert_intermediate_size: 40,
  layer_types: ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention'],
  max_position_embeddings: 256,
};
export const gdnConfigs: Record<string, { config: Record<string, unknown>; asPublished: boolean }> = {
  // Grouped in_proj_qkvz / in_proj_ba.
  qwen3_next: {
    config: { architectures: ['Qwen3NextForCausalLM'], model_type: 'qwen3_next', ...tinyHybrid, head_dim: 16, intermediate_size: 48, partial_rotary_factor: 0.25, tie_word_embeddings: true },
    asPublished: false,
  },
  // Split in_proj_qkv / z / b / a, fused experts as published, a vision tower the engine ignores.
  qwen3_5_moe: {
    config: {
      architectures: ['Qwen3_5MoeForConditionalGeneration'],
      model_type: 'qwen3_5_moe',
      tie_word_embeddings: true,
      text_config: {
        model_type: 'qwen3_5_moe_text',
        ...tinyHybrid,
        head_dim: 12,
        rope_parameters: { rope_type: 'default', rope_theta: 1000, partial_rotary_factor: 0.5, mrope_section: [1, 1, 1], mrope_interleaved: true },
      },
      vision_config: { depth: 2, hidden_size: 16, model_type: 'qwen3_5_moe' },
    },
    asPublished: true,
  },
};

/** Writes the tiny checkpoint of `arch` (a gdnConfigs key) into a new temporary folder. */
export async function writeGdnModel(arch: string, seed: number): Promise<string> {
  const dir = await tempDir(`afd-${arch}-gdn-`);
  await writeTestModel(dir, gdnConfigs[arch]!.config, { seed, asPublished: gdnConfigs[arch]!.asPublished });
  return dir;
}

/** One sequence's part of a step: new tokens after `cached` of them, its KV blocks and its state slot. */
export interface SlotSeq {
  ids: readonly number[];
  cached: number;
  blocks: readonly number[];
  slot: number;
  sample?: boolean;
}

export function slotPlan(seqs: readonly SlotSeq[], stageSplit?: number): StepPlan {
  const plan = buildStepPlan(
    seqs.map((s) => ({ tokenIds: s.ids, numCached: s.cached, blockTable: s.blocks, sample: s.sample ?? true })),
    { returnLogits: true, ...(stageSplit === undefined ? {} : { stageSplit }) },
  );
  plan.stateSlots = Int32Array.from(seqs.map((s) => s.slot));
  return plan;
}

/** The logit rows of a step's result, one per sampled sequence. */
export function rows(engine: Engine, logits: Float32Array): Float32Array[] {
  const V = engine.info.vocabSize;
  return Array.from({ length: logits.length / V }, (_, i) => logits.subarray(i * V, (i + 1) * V));
}

/**
 * Greedy generation of several sequences in lockstep, one step each time (DBO when
 * stageSplit is given): prefill in chunks of `chunk`, then decode; logits[s][i] chose tokens[s][i].
 */
export async function generate(
  engine: Engine,
  seqs: readonly { prompt: readonly number[]; blocks: readonly number[]; slot: number }[],
  maxNewTokens: number,
  o: { chunk?: number; stageSplit?: number } = {},
): Promise<{ tokens: number[][]; logits: Float32Array[][] }> {
  const tokens: number[][] = seqs.map(() => []);
  const logits: Float32Array[][] = seqs.map(() => []);
  const cached = seqs.map(() => 0);
  const chunk = o.chunk ?? Infinity;
  for (;;) {
    // Sequences still generating, in order (with a chunked prefill a short prompt finishes first).
    const live = seqs.map((_, i) => i).filter((i) => tokens[i]!.length < maxNewTokens);
    if (live.length === 0) break;
    const step = live.map((i): SlotSeq => {
      const s = seqs[i]!;
      if (cached[i]! < s.prompt.length) {
        const ids = s.prompt.slice(cached[i], cached[i]! + chunk);
        return { ids, cached: cached[i]!, blocks: s.blocks, slot: s.slot, sample: cached[i]! + ids.length === s.prompt.length };
      }
      return { ids: [tokens[i]!.at(-1)!], cached: cached[i]!, blocks: s.blocks, slot: s.slot };
    });
    const out = await engine.step(slotPlan(step, o.stageSplit === undefined ? undefined : Math.min(o.stageSplit, step.length)));
    const got = out.logits ? rows(engine, out.logits) : [];
    let r = 0;
    step.forEach((s, j) => {
      const i = live[j]!;
      cached[i]! += s.ids.length;
      if (s.sample === false) return;
      tokens[i]!.push(out.tokenIds[j]!);
      logits[i]!.push(Float32Array.from(got[r]!));
      r++;
    });
  }
  return { tokens, logits };
}

/** Arg-max and top-1 minus top-2 of a row. */
export function top2(row: ArrayLike<number>): { argmax: number; margin: number } {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  let second = -Infinity;
  for (let i = 0; i < row.length; i++) if (i !== best) second = Math.max(second, row[i]!);
  return { argmax: best, margin: row[best]! - second };
}

