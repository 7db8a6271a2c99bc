import { describe, expect, it } from 'vitest';
import type { CudaDecodeBenchResult, CudaDecodeBenchRow } from '@afd/native';
import { formatDecodeTable, mergeDecodeReport, parsePeerOutput } from './decodeReport.js';

function row(batch: number, graph: boolean, msPerStep: number): CudaDecodeBenchRow {
  return {
    batch, graph, msPerStep, msPerStepP10: msPerStep, msPerStepP90: msPerStep, deviceMsPerStep: msPerStep,
    tokensPerSecond: batch / (msPerStep / 1000), bytesPerStep: 6.2e9, activeExpertsPerLayer: 8,
    floorMsAtReference: 1.44, floorMsAtMeasured: 1.5, achievedGBs: 3000, ratioToFloor: 1.44 / msPerStep,
    kernelsPerStep: 532, tokensMatchEager: true,
  };
}

const ours: CudaDecodeBenchResult = {
  deviceName: 'NVIDIA H200', multiProcessors: 132, copyBandwidthGBs: 4200, weightBytes: 61e9, kvBytes: 27e9,
  setupSeconds: 3, graphCaptures: 2, graphHits: 60, graphMisses: 70,
  rows: [row(1, false, 4), row(1, true, 1.9), row(64, false, 30), row(64, true, 22)],
};
const meta = { model: 'qwen3_moe/qwen3-30b-a3b', context: 1024, commit: 'abc123', command: 'afd-bench decode' };

describe('decode report', () => {
  it('pairs graph and eager rows, computes the speedup over the peer and checks the targets', () => {
    const report = mergeDecodeReport(ours, { ok: true, rows: [{ batch: 1, msPerStep: 17 }, { batch: 64, msPerStep: 160 }] }, meta);
    expect(report.rows.map((r) => r.batch)).toEqual([1, 64]);
    expect(report.rows[0]!.speedupVsPeer).toBeCloseTo(17 / 1.9);
    expect(report.rows[0]!.meetsTarget).toBe(true);
    expect(report.rows[1]!.targetMs).toBe(20);
    expect(report.rows[1]!.meetsTarget).toBe(false);
    expect(formatDecodeTable(report)).toMatch(/64 +22\.00 +30\.00.*MISSED/);
  });

  it('reports the peer setting behind its number (CUDA graph or eager)', () => {
    const peer = {
      ok: true,
      rows: [
        { batch: 1, msPerStep: 13.99, msPerStepEager: 106.9, msPerStepGraph: 13.99, mode: 'cuda-graph' as const },
        { batch: 64, msPerStep: 160 },
      ],
    };
    const report = mergeDecodeReport(ours, peer, meta);
    expect(report.rows[0]!.peerMode).toBe('cuda-graph');
    expect(report.rows[1]!.peerMode).toBe('eager');
    expect(formatDecodeTable(report)).toMatch(/13\.99g/);
    expect(mergeDecodeReport(ours, null, meta).rows[0]!.peerMode).toBeNull();
  });

  it('keeps our numbers when the peer failed', () => {
    const report = mergeDecodeReport(ours, { ok: false, error: 'torch sees no CUDA device' }, meta);
    expect(report.rows[0]!.peerMsPerStep).toBeNull();
    expect(report.rows[0]!.speedupVsPeer).toBeNull();
    expect(report.peer?.error).toMatch(/no CUDA/);
  });

  it('rejects a batch without both modes', () => {
    expect(() => mergeDecodeReport({ ...ours, rows: [row(8, true, 5)] }, null, meta)).toThrow(/batch 8 lacks/);
  });

  it('reads the last JSON line of the peer and reports garbage clearly', () => {
    expect(parsePeerOutput('loading...\n{"ok": true, "rows": []}\n')).toEqual({ ok: true, rows: [] });
    expect(parsePeerOutput('Traceback ...')).toEqual({ ok: false, error: 'the peer printed no JSON result' });
    expect(parsePeerOutput('{broken').ok).toBe(false);
  });
});
