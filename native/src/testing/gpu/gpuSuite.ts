/**
 * The GPU test suite (`npm run test:gpu`): the CUDA op conformance suite against the CPU
 * backend, the engine on the CUDA backend (bf16 activations) against the CPU backend on
 * tiny models of every architecture (greedy tokens equal, logits close), CUDA graphs,
 * KV sizing, colocated / 1A1F / DBO bit-equality, dummy weights, expert parallelism with
 * two FFN ranks on one GPU, the golden fixtures under the bf16 rule (goldenCheck.ts), and
 * log-probabilities with bias, penalties, min-p and the token mask against the CPU engine
 * (logprobsCheck.ts), a reused KV prefix (prefix caching; prefixReuseCheck.ts), and the
 * Gated DeltaNet models with their per-sequence state slots (gdnCheck.ts), and a sequence's
 * KV blocks (and state slot) moved between two CUDA engines (kvTransferCheck.ts).
 * Runs where a CUDA device is visible; elsewhere it reports why it skipped.
 */
import { generateGreedy, scatteredBlocks, tinyConfigs } from '../engineTesting.js';
import type { NativeAddon } from '../../addon.js';
import { loadTestingAddon, type NativeTestingAddon } from '../testingAddon.js';
import { afdEqualityChecks } from './afdEqualityCheck.js';
import { withCpuAndCudaEngines, worstRelError } from './enginePair.js';
import { dummyWeightsChecks } from './dummyWeightsCheck.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';
import { engineGraphChecks } from './engineGraphCheck.js';
import { engineExpertGemmChecks } from './engineExpertGemmCheck.js';
import { goldenChecks } from './goldenCheck.js';
import { expertParallelChecks } from './expertParallelCheck.js';
import { kvSizingChecks } from './kvSizingCheck.js';
import { logprobsChecks } from './logprobsCheck.js';
import { prefixReuseChecks } from './prefixReuseCheck.js';
import { gdnChecks } from './gdnCheck.js';
import { kvPeerChecks } from './kvPeerCheck.js';
import { kvTransferChecks } from './kvTransferCheck.js';


export interface GpuSuiteReport {
  /** Why nothing ran (no CUDA build, no device); null when the suite ran. */
  skipped: string | null;
  device: string;
  checks: GpuCheck[];
  /** Suites that had nothing to run, with the reason. */
  notes: string[];
}


/** Why the suite cannot run here, or null. */
export function gpuSkipReason(addon: Pick<NativeAddon, 'probe'>): string | null {
  const p = addon.probe();
  if (p.variant !== 'cuda') return 'the addon was built without CUDA (AFD_CUDA=off or no nvcc): GPU tests skipped';
  if (p.devices.length === 0) return `no CUDA device visible (${p.cudaError || 'none found'}): GPU tests skipped`;
  return null;
}

function conformance(addon: NativeTestingAddon, seed: number, family: string): GpuCheck[] {
  return addon.cudaConformance({ seed, family }).map((c) => ({
    suite: 'conformance',
    name: `${c.op} [${c.shape}] ${c.dtype}`,
    passed: c.passed,
    detail: `relError ${c.relError.toExponential(2)} (bound ${c.bound.toExponential(1)}), unwritten ${c.unwritten}, mismatches ${c.mismatches}`,
  }));
}

async function engineVsCpu(): Promise<GpuCheck[]> {
  const checks: GpuCheck[] = [];
  for (const arch of Object.keys(tinyConfigs)) {
    await withCpuAndCudaEngines(arch, 7, async (cpu, cuda) => {
      const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
      const blocks = scatteredBlocks(4, 1, 31);
      const a = await generateGreedy(cpu, prompt, 5, { chunk: 4, blocks });
      const b = await generateGreedy(cuda, prompt, 5, { chunk: 4, blocks });
      const worst = worstRelError(b.logits, a.logits);
      const same = a.tokens.join(',') === b.tokens.join(',');
      checks.push({
        suite: 'engine',
        name: `${arch}: CUDA engine vs CPU engine (prefill in chunks of 4, 5 decode steps)`,
        passed: same && worst <= cudaLogitTolerance,
        detail: `tokens ${same ? 'equal' : `differ: cpu ${a.tokens} cuda ${b.tokens}`}; worst logits relError ${worst.toExponential(2)}`,
      });
    });
  }
  return checks;
}

/** The groups of the suite, in order; `conformance:<family>` runs one op family. */
export const gpuSuiteGroups = [
  'conformance:norm',
  'conformance:attention',
  'conformance:matmul',
  'conformance:activations',
  'conformance:deepseek',
  'conformance:linear',
  'engine',
  'graphs',
  'kv',
  'afd',
  'dummy',
  'golden',
  'expert-gemm',
  'expert-parallel',
  'logprobs',
  'prefix',
  'gdn',
  'kvtransfer',
  'kvpeer',
] as const;
export type GpuSuiteGroup = (typeof gpuSuiteGroups)[number];

/** Parses a comma list of group names (empty = all); an unknown name is an error listing them. */
export function parseGpuSuiteGroups(list: string | undefined): GpuSuiteGroup[] {
  if (!list || list.trim() === '') return [...gpuSuiteGroups];
  return list.split(',').map((g) => {
    const name = g.trim();
    if (!(gpuSuiteGroups as readonly string[]).includes(name)) throw new Error(`unknown GPU suite group "${name}" (groups: ${gpuSuiteGroups.join(', ')})`);
    return name as GpuSuiteGroup;
  });
}

/**
 * Runs the suite's groups (all by default); never throws for a failed check (see
 * `passed`), and a group that throws becomes one failed check naming the error.
 * onGroup is told before each group starts (progress on stderr).
 */
export async function runGpuSuite(opts: {
  fixturesDir: string;
  seed?: number;
  /** The testing addon (conformance); engines load on the product addon (Engine.load). */
  addon?: NativeTestingAddon;
  groups?: readonly GpuSuiteGroup[];
  onGroup?: (group: GpuSuiteGroup) => void;
}): Promise<GpuSuiteReport> {
  const addon = opts.addon ?? loadTestingAddon();
  const skipped = gpuSkipReason(addon);
  const device = addon.probe().devices[0]?.name ?? '';
  if (skipped) return { skipped, device, checks: [], notes: [] };
  const notes: string[] = [];
  const seed = opts.seed ?? 1;
  const run: Record<GpuSuiteGroup, () => Promise<GpuCheck[]>> = {
    'conformance:norm': async () => conformance(addon, seed, 'norm'),
    'conformance:attention': async () => conformance(addon, seed, 'attention'),
    'conformance:matmul': async () => conformance(addon, seed, 'matmul'),
    'conformance:activations': async () => conformance(addon, seed, 'activations'),
    'conformance:deepseek': async () => conformance(addon, seed, 'deepseek'),
    'conformance:linear': async () => conformance(addon, seed, 'linear'),
    engine: engineVsCpu,
    graphs: () => engineGraphChecks(),
    kv: kvSizingChecks,
    afd: afdEqualityChecks,
    dummy: dummyWeightsChecks,
    golden: () => goldenChecks(opts.fixturesDir, notes),
    'expert-gemm': engineExpertGemmChecks,
    'expert-parallel': expertParallelChecks,
    logprobs: logprobsChecks,
    prefix: prefixReuseChecks,
    gdn: gdnChecks,
    kvtransfer: kvTransferChecks,
    kvpeer: kvPeerChecks,
  };
  const checks: GpuCheck[] = [];
  for (const group of opts.groups ?? gpuSuiteGroups) {
    opts.onGroup?.(group);
    try {
      checks.push(...(await run[group]()));
    } catch (err) {
      checks.push({ suite: group.startsWith('conformance') ? 'conformance' : 'engine', name: `group ${group}`, passed: false, detail: `threw: ${(err as Error).message}` });
    }
  }
  return { skipped: null, device, checks, notes };
}
