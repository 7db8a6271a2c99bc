/**
 * GPU suite check of the bf16 engine's AFD split on one GPU: the colocated engine, the
 * attention + FFN engines joined over the TCP connector (1A1F, in one process), and both
 * with DBO (two stages) must give the same tokens and bit-identical logits, since the
 * wire carries the bf16 activations unchanged and every stage's kernels are chosen for
 * the whole step's rows (Backend::setStepRows). Three sequences, prefill + decode steps,
 * on a tiny model, on a model with tensor-core shapes (hidden 128, head dim 64), and on
 * the tiny DeepSeek-V2 / V3 models (MLA over the latent cache, grouped routing, shared
 * experts, dense first layers; V3 also with the gate on attention, where dense routing
 * weights cross the wire in place of router logits).
 */
import { rm } from 'node:fs/promises';
import { buildStepPlan, type PlanSeq, type StepResult } from '@afd/shared';
import { testRankConfig } from '../afdTesting.js';
import { tempDir, tinyQwen3MoeConfig, writeTestModel } from '../checkpointTesting.js';
import { AttentionLink } from '../../AttentionLink.js';
import { Engine } from '../../engine.js';
import { FfnServer } from '../../FfnServer.js';
import { roleSpec, scatteredBlocks, tinyConfigs } from '../engineTesting.js';
import { gdnConfigs } from '../gdnTesting.js';
import type { GpuCheck } from './gpuCheck.js';

const KV_BLOCK = 4;
const NUM_BLOCKS = 61;
const DECODES = 6;

async function run(engine: Engine, stageSplit: number): Promise<StepResult[]> {
  const prompts = [[5, 17, 3, 22, 41, 9, 30], [8, 1, 2], [44, 13, 7, 7, 19]];
  const blocks = prompts.map((_, i) => scatteredBlocks(6, i + 1, NUM_BLOCKS));
  const cached = prompts.map(() => 0);
  let next = prompts.map((p) => p);
  const out: StepResult[] = [];
  for (let step = 0; step <= DECODES; step++) {
    const plan: PlanSeq[] = next.map((ids, i) => ({ tokenIds: ids, numCached: cached[i]!, blockTable: blocks[i]! }));
    const stepPlan = buildStepPlan(plan, { stageSplit, returnLogits: true });
    if (engine.info.numStateSlots > 0) stepPlan.stateSlots = Int32Array.from(prompts, (_, i) => i); // gdn layers: slot i
    const r = await engine.step(stepPlan);
    out.push(r);
    next.forEach((ids, i) => (cached[i]! += ids.length));
    next = next.map((_, i) => [r.tokenIds[i]!]);
  }
  return out;
}

function sameBits(a: StepResult[], b: StepResult[]): string | null {
  for (let s = 0; s < a.length; s++) {
    if (a[s]!.tokenIds.join(',') !== b[s]!.tokenIds.join(',')) return `tokens differ at step ${s}: ${a[s]!.tokenIds} vs ${b[s]!.tokenIds}`;
    const x = a[s]!.logits!, y = b[s]!.logits!;
    const i = x.findIndex((v, j) => !Object.is(v, y[j]));
    if (i >= 0) return `logits differ at step ${s}, element ${i}: ${x[i]} vs ${y[i]}`;
  }
  return null;
}

async function modelCase(name: string, config: Record<string, unknown>, gateOnAttention = false): Promise<GpuCheck> {
  const dir = await tempDir('afd-gpu-afd-');
  const opts = { backend: 'cuda', numKvBlocks: NUM_BLOCKS, kvBlockSize: KV_BLOCK, graphPolicy: 'off' } as const;
  const engines: Engine[] = [];
  const cleanup: (() => Promise<void>)[] = [];
  try {
    await writeTestModel(dir, config, { seed: 9 });
    const load = async (role: 'colocated' | 'attention' | 'ffn'): Promise<Engine> => {
      const e = await Engine.load(await roleSpec(dir, role, gateOnAttention), opts);
      engines.push(e);
      return e;
    };
    const colocated = await load('colocated');
    const attn = await load('attention');
    const ffn = await load('ffn');
    const link = { topology: '1A1F', rank: 0, stepDeadlineMs: 20_000, rendezvousTimeoutMs: 20_000 };
    const server = new FfnServer(ffn, testRankConfig('ffn', { ...link, port: 0 }));
    cleanup.push(() => server.stop());
    const port = server.listenPort();
    const attention = new AttentionLink(attn, testRankConfig('attention', { ...link, port }));
    cleanup.push(() => attention.close({ shutdown: true }));
    await Promise.all([server.start(), attention.connect()]);
    const ref = await run(colocated, 3);
    const results: [string, StepResult[]][] = [
      ['colocated DBO', await run(colocated, 1)],
      ['1A1F', await run(attn, 3)],
      ['1A1F DBO', await run(attn, 1)],
    ];
    const problems = results.map(([what, r]) => [what, sameBits(ref, r)] as const).filter(([, p]) => p !== null);
    return {
      suite: 'engine',
      name: `${name}: colocated, colocated+DBO, 1A1F (tcp) and 1A1F+DBO on one GPU are bit-equal (3 sequences, prefill + ${DECODES} decode steps)`,
      passed: problems.length === 0,
      detail: problems.length === 0 ? 'tokens and logits bit-identical in every step' : problems.map(([w, p]) => `${w}: ${p}`).join('; '),
    };
  } catch (err) {
    return { suite: 'engine', name: `${name}: colocated / 1A1F / DBO bit-equality on one GPU`, passed: false, detail: (err as Error).message };
  } finally {
    for (const f of cleanup.reverse()) await f().catch(() => undefined);
    for (const e of engines) e.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function afdEqualityChecks(): Promise<GpuCheck[]> {
  return [
    await modelCase('tiny qwen3_moe (odd shapes)', tinyQwen3MoeConfig()),
    await modelCase(
      'qwen3_moe hidden 128 / head dim 64 / 10 experts top-3',
      tinyQwen3MoeConfig({ hidden_size: 128, head_dim: 64, num_attention_heads: 8, num_key_value_heads: 2, moe_intermediate_size: 48, num_experts: 10, num_experts_per_tok: 3, vocab_size: 96 }),
    ),
    await modelCase('tiny deepseek_v2 (MLA, q_lora null, dense layer 0, 2 shared experts)', tinyConfigs['deepseek_v2']!),
    await modelCase('tiny deepseek_v3 (MLA with q_lora, yarn, noaux_tc over 3 groups + score bias)', tinyConfigs['deepseek_v3']!),
    await modelCase('tiny deepseek_v3 with the gate on attention (dense routing weights on the wire)', tinyConfigs['deepseek_v3']!, true),
    await modelCase('tiny qwen3_next (Gated DeltaNet state slots, gated attention, gated shared expert)', gdnConfigs['qwen3_next']!.config),
  ];
}
