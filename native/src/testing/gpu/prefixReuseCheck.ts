/**
 * GPU suite group `prefix`: a reused KV prefix (prefix caching, n samples) on the CUDA
 * engine, for every tiny architecture (MLA's latent cache included). A sequence starting
 * from another one's full blocks generates what the sequence that computed the whole
 * prompt did (CUDA, greedy tokens equal), and its logits match the CPU engine's whole
 * prefill under the bf16 tolerance.
 */
import { tinyConfigs } from '../engineTesting.js';
import { runPrefixReuse } from '../prefixReuse.js';
import { withCpuAndCudaEngines, worstRelError } from './enginePair.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';

export async function prefixReuseChecks(): Promise<GpuCheck[]> {
  const checks: GpuCheck[] = [];
  const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3];
  for (const arch of Object.keys(tinyConfigs)) {
    await withCpuAndCudaEngines(arch, 5, async (cpu, cuda) => {
      const ref = await runPrefixReuse(cpu, prompt, 4);
      const run = await runPrefixReuse(cuda, prompt, 4);
      const worst = worstRelError(run.reused.logits, ref.whole.logits);
      const same = run.reused.tokens.join(',') === run.whole.tokens.join(',');
      const sameAsCpu = run.reused.tokens.join(',') === ref.whole.tokens.join(',');
      checks.push({
        suite: 'engine',
        name: `${arch}: CUDA engine reading a reused ${run.reusedTokens}-token KV prefix vs computing it (and vs the CPU engine)`,
        passed: same && sameAsCpu && worst <= cudaLogitTolerance,
        detail: `tokens ${same ? 'equal' : `differ: whole ${run.whole.tokens} reused ${run.reused.tokens}`}; vs CPU ${sameAsCpu ? 'equal' : `differ: cpu ${ref.whole.tokens}`}; worst logits relError vs CPU ${worst.toExponential(2)}`,
      });
    });
  }
  return checks;
}
