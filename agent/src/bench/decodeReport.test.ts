import { describe, expect, it } from 'vitest';
import { formatDecodeTable, mergeDecodeReport, parsePeerOutput, type EngineDecodeRow } from './decodeReport.js';

function row(batch: number, graph: boolean, msPerStep: number): EngineDecodeRow {
  return {
    batch, graph, msPerStep, msPerStepP10: msPerStep, msPerStepP90: msPerStep, engineMsPerStep: msPerStep - 0.1,
    tokensPerSecond: batch / (msPerStep / 1000), kernelsPerStep: graph ? 480 : null, graphHits: graph ? 30 : 0, graphMisses: graph ? 0 : 30,
  };
}

const ours = [row(1, false, 4), row(1, true, 2.9), row(64, false, 30), row(64, true, 22)];
const floors = [
  { batch: 1, weightBytes: 6.1e9, kvBytes: 0.1e9, activeExpertsPerLayer: 8 },
  { batch: 64, weightBytes: 59.6e9, kvBytes: 6.4e9, activeExpertsPerLayer: 125.9 },
];
const meta = { model: 'qwen3_moe/qwen3-30b-a3b', context: 1024, weightBytes: 61e9, loadSeconds: 3, referenceBandwidth: 4.3e12, commit: 'abc123', command: 'afd-bench decode' };

describe('decode report', () => {
  it('pairs graph and eager rows, computes floors, the speedup over the peer and the targets', () => {
    const report = mergeDecodeReport(ours, floors, { ok: true, copyBandwidthGBs: 4200, rows: [{ batch: 1, msPerStep: 17 }, { batch: 64, msPerStep: 160 }] }, meta);
    expect(report.path).toBe('Engine::step');
    expect(report.rows.map((r) => r.batch)).toEqual([1, 64]);
    const [b1, b64] = report.rows as [typeof report.rows[0], typeof report.rows[0]];
    expect(b1.floorMs).toBeCloseTo(6.2e9 / 4.3e12 * 1000, 6);
    expect(b1.floorMsAtMeasured).toBeCloseTo(6.2e9 / 4.2e12 * 1000, 6);
    expect(b1.ratioToFloor).toBeCloseTo(b1.floorMs / 2.9, 6);
    expect(b1.speedupVsPeer).toBeCloseTo(17 / 2.9);
    expect(b1.meetsTarget).toBe(true);
    expect(b64.targetMs).toBe(18);
    expect(b64.meetsTarget).toBe(false);
    expect(formatDecodeTable(report)).toMatch(/64 +22\.00 +30\.00.*MISSED/);
  });

  it('reports the peer setting behind its number (CUDA graph or eager)', () => {
    const peer = { ok: true, rows: [{ batch: 1, msPerStep: 13.99, mode: 'cuda-graph' as const }, { batch: 64, msPerStep: 160 }] };
    const report = mergeDecodeReport(ours, floors, peer, meta);
    expect(report.rows[0]!.peerMode).toBe('cuda-graph');
    expect(report.rows[1]!.peerMode).toBe('eager');
    expect(formatDecodeTable(report)).toMatch(/13\.99g/);
    expect(mergeDecodeReport(ours, floors, null, meta).rows[0]!.peerMode).toBeNull();
  });

  it('keeps our numbers when the peer failed, and a mode that did not run', () => {
    const report = mergeDecodeReport(ours.filter((r) => r.graph), floors, { ok: false, error: 'torch sees no CUDA device' }, meta);
    expect(report.rows[0]!.peerMsPerStep).toBeNull();
    expect(report.rows[0]!.eager).toBeNull();
    expect(report.rows[0]!.floorMsAtMeasured).toBeNull();
    expect(formatDecodeTable(report)).toMatch(/^1 +2\.90 +- /m);
  });

  it('judges a DeepSeek model by its own targets (batch 64 within 10 ms, no batch-1 step target)', () => {
    const report = mergeDecodeReport(ours, floors, null, { ...meta, model: 'deepseek_v2/deepseek-v2-lite' });
    expect(report.rows.map((r) => r.targetMs)).toEqual([null, 10]);
    expect(report.rows[1]!.meetsTarget).toBe(false);
  });

  it('shows the step with extras beside each mode, as ms and the ratio to the plain step', () => {
    const withExtras = ours.map((r) => ({ ...r, extras: { msPerStep: r.msPerStep * 1.1, engineMsPerStep: r.msPerStep, ratio: 1.1 } }));
    const report = mergeDecodeReport(withExtras, floors, null, { ...meta, extras: 'top-logprobs 5 + penalties' });
    expect(report.extras).toBe('top-logprobs 5 + penalties');
    expect(report.rows[1]!.graph!.extras!.ratio).toBe(1.1);
    const table = formatDecodeTable(report).split('\n');
    expect(table[0]).toBe('extras: top-logprobs 5 + penalties on every sequence (ratio to the plain step)');
    expect(table[1]).toMatch(/target +graph\+extras ms +eager\+extras ms$/);
    expect(table[3]).toMatch(/MISSED +24\.20 \(1\.10x\) +33\.00 \(1\.10x\)$/);
    expect(table[1]!.indexOf('graph+extras')).toBe(table[3]!.indexOf('24.20'));
    expect(mergeDecodeReport(ours, floors, null, meta).extras).toBeNull();
  });

  it('requires a floor per batch', () => {
    expect(() => mergeDecodeReport(ours, floors.slice(0, 1), null, meta)).toThrow('no floor for batch 64');
  });

  it('parses the last JSON line of the peer', () => {
    expect(parsePeerOutput('[hf] x\n{"ok":true,"rows":[]}\n').ok).toBe(true);
    expect(parsePeerOutput('nothing').error).toMatch(/no JSON/);
    expect(parsePeerOutput('{broken').error).toMatch(/unreadable/);
  });
});
