/**
 * GPU suite check of dummy weights (--load-format dummy) on CUDA: the generator gives the
 * CPU's bits (the op conformance suite checks that directly), so a dummy model on the CUDA
 * engine must follow the CPU engine's greedy tokens within the bf16 tolerance, and two
 * loads with one seed must be bit-identical while another seed changes the logits. Run on
 * a Qwen3-MoE model with tensor-core shapes and on the tiny DeepSeek-V3 config (MLA with
 * q_lora, its norms drawn around 1, the score correction bias drawn like a weight).
 */
import { dummyLoadSpec } from '../../checkpoint/dummy.js';
import { parseModelConfig } from '../../checkpoint/config.js';
import { relativeError } from '../golden.js';
import { tinyQwen3MoeConfig } from '../checkpointTesting.js';
import { Engine } from '../../engine.js';
import { generateGreedy, scatteredBlocks, tinyConfigs } from '../engineTesting.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';

async function dummyCase(label: string, configJson: Record<string, unknown>): Promise<GpuCheck> {
  const config = parseModelConfig(`${label}/config.json`, configJson);
  const name = `dummy weights (load format dummy) on cuda, ${label}: CUDA engine vs CPU engine, same seed; reproducible per seed`;
  const opts = { numKvBlocks: 31, kvBlockSize: 4 };
  const blocks = scatteredBlocks(6, 2, 31);
  const prompt = [4, 9, 33, 70, 12, 5].map((t) => t % config.vocabSize);
  const engines: Engine[] = [];
  try {
    const load = async (backend: 'cpu' | 'cuda', seed: number): Promise<Engine> => {
      const e = await Engine.load(dummyLoadSpec(config, 'colocated', { seed }).spec, { ...opts, backend });
      engines.push(e);
      return e;
    };
    const cpu = await generateGreedy(await load('cpu', 7), prompt, 6, { blocks });
    const a = await generateGreedy(await load('cuda', 7), prompt, 6, { blocks });
    const b = await generateGreedy(await load('cuda', 7), prompt, 6, { blocks });
    const other = await generateGreedy(await load('cuda', 8), prompt, 6, { blocks });
    let worst = 0;
    for (let i = 0; i < cpu.logits.length; i++) worst = Math.max(worst, relativeError(a.logits[i]!, cpu.logits[i]!));
    const same = a.tokens.join(',') === cpu.tokens.join(',');
    const repro = a.logits.every((l, i) => l.every((v, j) => Object.is(v, b.logits[i]![j])));
    const seedMatters = relativeError(other.logits[0]!, a.logits[0]!) > 1e-2;
    return {
      suite: 'engine',
      name,
      passed: same && worst <= cudaLogitTolerance && repro && seedMatters,
      detail: `tokens ${same ? 'equal' : `differ: cpu ${cpu.tokens} cuda ${a.tokens}`}; worst logits relError ${worst.toExponential(2)}; same seed bit-identical: ${repro}; another seed changes the logits: ${seedMatters}`,
    };
  } catch (err) {
    return { suite: 'engine', name, passed: false, detail: (err as Error).message };
  } finally {
    for (const e of engines) e.close();
  }
}

export async function dummyWeightsChecks(): Promise<GpuCheck[]> {
  return [
    await dummyCase('qwen3_moe', tinyQwen3MoeConfig({ hidden_size: 128, head_dim: 64, num_attention_heads: 8, num_key_value_heads: 2, moe_intermediate_size: 48, num_experts: 10, num_experts_per_tok: 3, vocab_size: 96 })),
    await dummyCase('deepseek_v3', tinyConfigs['deepseek_v3']!),
  ];
}
