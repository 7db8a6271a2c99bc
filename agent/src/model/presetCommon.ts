/** What every preset table shares: the preset row and the fields of the Qwen3 tokenizer every preset ships with. */
import type { ArchFamily } from '@afd/native/checkpoint';

/** One preset. */
export interface ModelPreset {
  arch: ArchFamily;
  /** Preset name, unique per arch ("tiny", "qwen3-30b-a3b" ...). */
  name: string;
  description: string;
  /** 'local': make-model writes weights; 'device': config only, weights are created on the GPU. */
  weights: 'local' | 'device';
  /** The config.json written for this preset. */
  config: Record<string, unknown>;
}

/** Qwen3 tokenizer ids (the tokenizer every preset ships with). */
export const qwenTokens = { bos_token_id: 151643, eos_token_id: 151645 };
export const qwenVocab = 151936;

/** Fields every preset config shares. */
export const common = { hidden_act: 'silu', initializer_range: 0.02, use_cache: true, attention_dropout: 0, torch_dtype: 'bfloat16' };

