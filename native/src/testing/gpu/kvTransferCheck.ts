/**
 * GPU suite group `kvtransfer`: a sequence moved between two CUDA engines of one model in one
 * process (prefill / decode disaggregation; Engine.exportKvBlocks / importKvBlocks, and the
 * state slot of a Gated DeltaNet model). Engine B continues from A's imported full blocks
 * (bf16 cache) as A does: greedy tokens equal, logits within the bf16 tolerance; and B
 * without the import reads something else (the control's first logits differ).
 */
import { rm } from 'node:fs/promises';
import { Engine } from '../../engine.js';
import { roleSpec, writeTinyModel } from '../engineTesting.js';
import { writeGdnModel } from '../gdnTesting.js';
import { runKvTransfer } from '../kvTransfer.js';
import { worstRelError } from './enginePair.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';

const opts = { backend: 'cuda' as const, kvBlockSize: 4, numKvBlocks: 31, numStateSlots: 4 };
const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7];

async function transferCheck(arch: string, dir: string): Promise<GpuCheck> {
  const spec = await roleSpec(dir, 'colocated');
  const a = await Engine.load(spec, opts);
  const b = await Engine.load(spec, opts);
  try {
    const run = await runKvTransfer(a, b, prompt, opts.kvBlockSize, 8);
    const worst = worstRelError(run.b.logits, run.a.logits);
    const control = worstRelError(run.control.logits.slice(0, 1), run.a.logits.slice(0, 1));
    const same = run.b.tokens.join(',') === run.a.tokens.join(',');
    const state = run.stateBytes > 0 ? ` and a ${run.stateBytes}-byte state slot` : '';
    return {
      suite: 'engine',
      name: `${arch}: CUDA engine B continues from ${run.movedTokens} tokens of KV (${run.kvBytes} bytes, ${a.info.kvDtype})${state} imported from engine A as A does`,
      passed: same && worst <= cudaLogitTolerance && control > cudaLogitTolerance,
      detail: `tokens ${same ? 'equal' : `differ: A ${run.a.tokens} B ${run.b.tokens}`}; worst logits relError B vs A ${worst.toExponential(2)}; control without the import ${control.toExponential(2)} (must exceed ${cudaLogitTolerance})`,
    };
  } finally {
    a.close();
    b.close();
  }
}

/** Runs `check` on a tiny model of each KV layout (Qwen3-MoE, DeepSeek-V2's MLA latent, Qwen3-Next's state), each in its own directory. */
export async function perTransferModel(check: (arch: string, dir: string) => Promise<GpuCheck>): Promise<GpuCheck[]> {
  const checks: GpuCheck[] = [];
  const models: [string, () => Promise<string>][] = [
    ['qwen3_moe', () => writeTinyModel('qwen3_moe', 5)],
    ['deepseek_v2', () => writeTinyModel('deepseek_v2', 5)],
    ['qwen3_next', () => writeGdnModel('qwen3_next', 5)],
  ];
  for (const [arch, write] of models) {
    const dir = await write();
    try {
      checks.push(await check(arch, dir));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  return checks;
}

export function kvTransferChecks(): Promise<GpuCheck[]> {
  return perTransferModel(transferCheck);
}
