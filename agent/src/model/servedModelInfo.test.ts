import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { servedModelFromModelsList, toApiModelInfo } from '@afd/shared';
import { countParameters, modelInfoFileName, readServedModelInfo } from './servedModelInfo.js';

const dir = await mkdtemp(join(tmpdir(), 'afd-model-info-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('readServedModelInfo', () => {
  it('counts the whole model from config.json and reads afd-model-info.json', async () => {
    await writeFile(join(dir, 'config.json'), JSON.stringify({
        architectures: ['Qwen3MoeForCausalLM'], vocab_size: 64, hidden_size: 24, intermediate_size: 40, num_hidden_layers: 3, num_attention_heads: 4,
        num_key_value_heads: 2, head_dim: 8, num_experts: 6, num_experts_per_tok: 2, moe_intermediate_size: 16, mlp_only_layers: [1], tie_word_embeddings: true,
      }));
    // 64x24 embedding; per layer 2 norms + q/k/v/o + q/k norms; layer 1 dense, layers 0 and 2: router + 6 experts; final norm.
    const attn = 24 * 2 + 32 * 24 + 16 * 24 * 2 + 24 * 32 + 8 * 2;
    const moe = 6 * 24 + 6 * 3 * 16 * 24;
    expect(await countParameters(dir)).toBe(64 * 24 + 3 * attn + 2 * moe + 3 * 40 * 24 + 24);
    expect(await readServedModelInfo(dir, 'served')).toEqual({ name: 'served', parameters: await countParameters(dir), description: null, examplePrompts: [] });
    await writeFile(join(dir, modelInfoFileName), JSON.stringify({ display_name: 'Demo', description: 'demo model trained on X', example_prompts: [{ mode: 'chat', text: 'What is a lighthouse?' }] }));
    const info = await readServedModelInfo(dir, 'served');
    expect(info).toMatchObject({ name: 'Demo', description: 'demo model trained on X', examplePrompts: [{ mode: 'chat', text: 'What is a lighthouse?' }] });
    expect(servedModelFromModelsList({ data: [{ id: 'served', afd: toApiModelInfo(info) }] })).toEqual(info);
    expect(servedModelFromModelsList({ data: [{ id: 'other server' }] })).toBeNull();
  });

  it('rejects a broken afd-model-info.json, naming it', async () => {
    await writeFile(join(dir, modelInfoFileName), JSON.stringify({ example_prompts: [{ mode: 'poem', text: 'x' }] }));
    await expect(readServedModelInfo(dir)).rejects.toThrow(/afd-model-info\.json: example_prompts\.0\.mode/);
    await writeFile(join(dir, modelInfoFileName), '{');
    await expect(readServedModelInfo(dir)).rejects.toThrow(/afd-model-info\.json is not valid JSON/);
  });
});
