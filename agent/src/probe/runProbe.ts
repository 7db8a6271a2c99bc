import { execFile } from 'node:child_process';
import { z } from 'zod';
import type { ProbeResult } from '@afd/native';
import { selfCommand } from '../util/self.js';
import { withReadableCudaError } from './cudaMessage.js';

const library = z.object({ loaded: z.boolean(), soname: z.string(), version: z.string(), error: z.string() });
/** Validates what the probe child prints before the agent trusts it. */
export const probeResultSchema = z.object({
  version: z.string(),
  variant: z.enum(['cpu', 'cuda']),
  backends: z.array(z.string()),
  cudaRuntimeVersion: z.number(),
  cudaDriverVersion: z.number(),
  cudaError: z.string(),
  devices: z.array(
    z.object({
      index: z.number().int(),
      name: z.string(),
      totalMemoryBytes: z.number(),
      freeMemoryBytes: z.number(),
      computeCapability: z.string(),
      multiProcessors: z.number().int(),
    }),
  ),
  cublas: library,
  cublasLt: library,
  nccl: library,
}) satisfies z.ZodType<ProbeResult>;

export interface ProbeOutcome {
  /** The probe as reported by the child, or a CPU-only fallback when the child failed. */
  result: ProbeResult;
  /** Set when the child crashed or printed garbage: the GPU stack is treated as absent. */
  degraded?: string;
}

/** The answer when the native probe cannot run at all: CPU only, with the reason. */
export function cpuOnlyFallback(reason: string): ProbeResult {
  const lib = { loaded: false, soname: '', version: '', error: reason };
  return {
    version: 'unknown',
    variant: 'cpu',
    backends: ['cpu'],
    cudaRuntimeVersion: 0,
    cudaDriverVersion: 0,
    cudaError: reason,
    devices: [],
    cublas: lib,
    cublasLt: lib,
    nccl: lib,
  };
}

/**
 * Runs the addon's probe() in a child process (`afd-agent __probe`), so a broken GPU
 * driver or library that crashes on load cannot take the agent down with it.
 */
export function runProbeInChild(timeoutMs = 30_000): Promise<ProbeOutcome> {
  const self = selfCommand();
  return new Promise((resolve) => {
    execFile(self.file, [...self.args, '__probe'], { timeout: timeoutMs, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      if (err) {
        const why = `native probe failed (${err.message.split('\n')[0]}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`;
        resolve({ result: cpuOnlyFallback(why), degraded: why });
        return;
      }
      try {
        const parsed = probeResultSchema.parse(JSON.parse(stdout));
        resolve({ result: withReadableCudaError(parsed) });
      } catch (e) {
        const why = `native probe printed an invalid report: ${(e as Error).message}`;
        resolve({ result: cpuOnlyFallback(why), degraded: why });
      }
    });
  });
}
