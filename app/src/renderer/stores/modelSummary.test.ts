import { describe, expect, it } from 'vitest';
import type { ModelInspectResult } from '@afd/shared';
import { modelSummary } from './draftChecks.js';

const result = (linearAttentionLayers?: number): ModelInspectResult => ({
  dir: '/models/m',
  status: 'ready',
  reason: null,
  config: {
    architecture: 'Qwen3_5MoeForConditionalGeneration',
    family: 'qwen3_5_moe',
    numLayers: 40,
    hiddenSize: 2048,
    numExperts: 256,
    numExpertsPerTok: 8,
    vocabSize: 248320,
    maxPositionEmbeddings: 262144,
    parameters: 35_000_000_000,
    roleBytes: { colocated: 1, attention: 1, ffn: 1 },
    ...(linearAttentionLayers === undefined ? {} : { linearAttentionLayers }),
  },
  weights: { present: false, files: 0, bytes: 0 },
  tokenizer: { present: true, chatTemplate: true },
  roles: ['colocated', 'attention', 'ffn'],
});

describe('the model line of the Topology screen', () => {
  it('names the Gated DeltaNet layers of a hybrid model, and nothing for an attention-only one', () => {
    expect(modelSummary(result(30))).toMatch(/^Qwen3_5MoeForConditionalGeneration · 40 layers \(30 Gated DeltaNet\) · 35\.0 B parameters · 256 experts/);
    expect(modelSummary(result(0))).toMatch(/ · 40 layers · 35\.0 B parameters/);
    expect(modelSummary(result())).toMatch(/ · 40 layers · 35\.0 B parameters/);
  });
});
