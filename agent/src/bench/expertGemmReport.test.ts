import { describe, expect, it } from 'vitest';
import type { CudaExpertGemmBenchResult, CudaExpertGemmBenchRow, CudaExpertGemmTiming } from '@afd/native';
import { buildExpertGemmReport, decideExpertGemm, formatExpertGemmTable } from './expertGemmReport.js';

function timing(deviceMs: number | null, error = ''): CudaExpertGemmTiming {
  const ran = deviceMs !== null;
  const ms = deviceMs ?? 0;
  return { ran, error, deviceMs: ms, deviceMsP10: ms, deviceMsP90: ms, hostMs: ms, achievedGBs: ran ? 1e3 / ms : 0, ratioToFloor: ran ? 0.1 / ms : 0 };
}

function row(batch: number, oursMs: number, cublasMs: number | null, relError = 3e-3): CudaExpertGemmBenchRow {
  const agree = { ran: cublasMs !== null, relError, maxError: relError * 2, unwritten: 0 };
  return {
    batch, routedRows: batch * 8, activeExperts: Math.min(128, batch * 8), bytes: 1e8, floorMs: 0.1,
    ours: timing(oursMs), oursGraph: timing(oursMs * 0.9), cublasWithCopy: timing(cublasMs, cublasMs === null ? 'lacks the symbol cublasGemmGroupedBatchedEx' : ''),
    cublasCountsKnown: timing(cublasMs === null ? null : cublasMs * 0.8), cublasCountsKnownGraph: timing(cublasMs === null ? null : cublasMs * 0.7), cublasPerExpert: timing(null, 'not requested'),
    widenMs: 0.004, oursUnwritten: 0, cublas: agree, perExpert: { ran: false, relError: 0, maxError: 0, unwritten: 0 },
  };
}

function result(rows: CudaExpertGemmBenchRow[]): CudaExpertGemmBenchResult {
  return {
    deviceName: 'NVIDIA H200', cublasLibrary: 'libcublas.so.13', cublasVersion: '13.1.0', cublasError: '',
    groupedGemmAvailable: rows.every((r) => r.cublasWithCopy.ran), batchedGemmAvailable: true, stridedBatchedGemmAvailable: true, setupSeconds: 1, rows,
  };
}

const meta = {
  model: 'qwen3_moe/qwen3-30b-a3b', shape: { numExperts: 128, hidden: 2048, intermediate: 768, topK: 8 },
  routing: 'uniform', layers: 4, warmup: 5, iterations: 50, commit: 'abc123', command: 'afd-bench expert-gemm',
};

describe('expert GEMM decision rule', () => {
  it('picks cuBLAS from the smallest batch where it wins at every larger batch', () => {
    const d = decideExpertGemm([row(1, 0.04, 0.09), row(8, 0.1, 0.08), row(64, 0.3, 0.35), row(256, 0.5, 0.4), row(512, 0.9, 0.6)]);
    expect(d.cublasWinsAt).toEqual([8, 256, 512]);
    expect(d.autoMinTokens).toBe(256);
  });

  it('keeps ours when cuBLAS loses at the largest batch, wins within the margin, or disagrees', () => {
    expect(decideExpertGemm([row(8, 0.1, 0.05), row(512, 0.9, 1.0)]).autoMinTokens).toBeNull();
    expect(decideExpertGemm([row(512, 1.0, 0.97)]).cublasWinsAt).toEqual([]);
    expect(decideExpertGemm([row(512, 1.0, 0.5, 0.3)]).autoMinTokens).toBeNull();
  });

  it('counts unwritten output as disagreement', () => {
    const r = row(256, 1.0, 0.5);
    r.cublas.unwritten = 12;
    expect(decideExpertGemm([r]).cublasWinsAt).toEqual([]);
  });
});

describe('expert GEMM report', () => {
  it('marks each row, notes the missing symbol and prints a table', () => {
    const report = buildExpertGemmReport(result([row(1, 0.04, null), row(256, 0.5, null)]), meta);
    expect(report.rows.map((r) => r.pick)).toEqual(['ours', 'ours']);
    expect(report.rows[0]!.cublasSpeedup).toBeNull();
    expect(report.notes.join('\n')).toMatch(/cublasGemmGroupedBatchedEx is missing in cuBLAS 13\.1\.0/);
    const table = formatExpertGemmTable(report);
    expect(table).toMatch(/^batch +active/);
    expect(table).toMatch(/\n256 +128 +0\.100 +0\.500 +0\.450 +- +- +- /);
    expect(table).toMatch(/lacks the symbol cublasGemmGroupedBatchedEx/);
  });

  it('reports the speedup and the pick when cuBLAS wins', () => {
    const report = buildExpertGemmReport(result([row(64, 0.3, 0.35), row(256, 0.5, 0.25)]), meta);
    expect(report.rows[1]!.cublasSpeedup).toBeCloseTo(2);
    expect(report.rows.map((r) => r.pick)).toEqual(['ours', 'cublas']);
    expect(report.decision.autoMinTokens).toBe(256);
    expect(JSON.parse(JSON.stringify(report)).bench).toBe('expert-gemm');
  });
});
