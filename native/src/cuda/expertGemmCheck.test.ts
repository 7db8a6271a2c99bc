import { describe, expect, it } from 'vitest';
import type { CudaExpertGemmBenchOptions, CudaExpertGemmBenchResult, CudaExpertGemmBenchRow, CudaExpertGemmTiming } from '../index.js';
import { expertGemmCheckCases, expertGemmChecks } from './expertGemmCheck.js';

const ok: CudaExpertGemmTiming = { ran: true, error: '', deviceMs: 0.1, deviceMsP10: 0.1, deviceMsP90: 0.1, hostMs: 0.2, achievedGBs: 1000, ratioToFloor: 0.5 };
const missing: CudaExpertGemmTiming = { ...ok, ran: false, error: 'cuBLAS 13.1.0 (libcublas.so.13) lacks the symbol cublasGemmGroupedBatchedEx' };

function row(batch: number, relError: number, unwritten = 0): CudaExpertGemmBenchRow {
  const agreement = { ran: true, relError, maxError: relError, unwritten };
  return {
    batch, routedRows: batch * 4, activeExperts: 4, bytes: 1, floorMs: 1, ours: ok, oursGraph: ok, cublasWithCopy: ok,
    cublasCountsKnown: ok, cublasCountsKnownGraph: ok, cublasPerExpert: ok, widenMs: 0, oursUnwritten: 0, cublas: agreement, perExpert: { ...agreement, unwritten: 0 },
  };
}

function fakeAddon(make: (o: CudaExpertGemmBenchOptions) => Partial<CudaExpertGemmBenchResult>) {
  const calls: CudaExpertGemmBenchOptions[] = [];
  return {
    calls,
    addon: {
      cudaExpertGemmBench(o: CudaExpertGemmBenchOptions = {}): CudaExpertGemmBenchResult {
        calls.push(o);
        return {
          deviceName: 'H200', cublasLibrary: 'libcublas.so.13', cublasVersion: '13.1.0', cublasError: '', groupedGemmAvailable: true,
          batchedGemmAvailable: true, stridedBatchedGemmAvailable: true, setupSeconds: 0, rows: (o.batches ?? []).map((b) => row(b, 4e-3)), ...make(o),
        };
      },
    },
  };
}

describe('expert GEMM GPU-suite checks', () => {
  it('passes agreeing rows of every case and covers the real expert shape', () => {
    const { addon, calls } = fakeAddon(() => ({}));
    const notes: string[] = [];
    const checks = expertGemmChecks(addon, notes);
    expect(calls).toHaveLength(expertGemmCheckCases.length);
    expect(calls[1]!.numExperts).toBeUndefined(); // the benchmark's Qwen3-30B-A3B defaults
    expect(checks.length).toBe(calls.reduce((n, c) => n + (c.batches?.length ?? 0), 0));
    expect(checks.every((c) => c.passed)).toBe(true);
    expect(notes).toEqual([]);
  });

  it('fails on an error above the bf16 bound, unwritten output, NaN or a variant that did not run', () => {
    const bad = [row(1, 0.5), row(5, 1e-3, 3), row(37, Number.NaN), { ...row(64, 1e-3), cublasPerExpert: missing }];
    const { addon } = fakeAddon((o) => ({ rows: o.numExperts === 16 ? bad : [] }));
    const checks = expertGemmChecks(addon, []);
    expect(checks.map((c) => c.passed)).toEqual([false, false, false, false]);
    expect(checks[3]!.detail).toMatch(/lacks the symbol cublasGemmGroupedBatchedEx/);
  });

  it('turns a thrown benchmark into a failed check', () => {
    const addon = { cudaExpertGemmBench: (): CudaExpertGemmBenchResult => { throw new Error('CUDA error: unspecified launch failure'); } };
    const checks = expertGemmChecks(addon, []);
    expect(checks).toHaveLength(expertGemmCheckCases.length);
    expect(checks.every((c) => !c.passed && /unspecified launch failure/.test(c.detail))).toBe(true);
  });

  it('notes a cuBLAS older than 12.5 and fails a newer one that lacks grouped GEMM', () => {
    const notes: string[] = [];
    const old = fakeAddon(() => ({ groupedGemmAvailable: false, cublasVersion: '12.4.5', rows: [] }));
    expect(expertGemmChecks(old.addon, notes)).toEqual([]);
    expect(notes[0]).toMatch(/cuBLAS 12\.4\.5 .*lacks cublasGemmGroupedBatchedEx \(added in 12\.5\)/);
    const newer = fakeAddon(() => ({ groupedGemmAvailable: false, rows: [] }));
    const checks = expertGemmChecks(newer.addon, []);
    expect(checks).toHaveLength(1);
    expect(checks[0]!.passed).toBe(false);
  });
});
