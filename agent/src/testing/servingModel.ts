/**
 * Test helper: the smallest model that still runs every path of the AFD split, so tests
 * with hundreds of streams fit a loaded 2-core CI box: Qwen3-MoE layout, 2 layers, hidden
 * 64, 4 experts top-2, a 4096-entry vocabulary (prompts are token ids below 4096; the
 * real Qwen3 tokenizer still ships with it, so text is tokenised as in production).
 */
import { makeModel } from '../model/makeModel.js';

export const servingModelOverrides = {
  hidden_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 32,
  intermediate_size: 128,
  num_experts: 4,
  num_experts_per_tok: 2,
  moe_intermediate_size: 64,
  vocab_size: 4096,
  bos_token_id: 1,
  eos_token_id: 2,
};

/** Writes the model into `dir` (absolute); resolves with `dir`. */
export async function makeServingModel(dir: string): Promise<string> {
  await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: dir, seed: 0, force: true, overrides: servingModelOverrides });
  return dir;
}
