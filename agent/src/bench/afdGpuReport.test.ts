import { describe, expect, it } from 'vitest';
import { evaluateAfdTargets, type AfdGpuReport } from './afdGpuReport.js';

const report: AfdGpuReport = {
  device: 'NVIDIA H200',
  pingPong: [{ transport: 'nccl', bytes: 4096, hostRoundTripUs: 26, hostRoundTripP90Us: 30, graphRoundTripUs: 12.7, graphRounds: 48 }],
  colocated: [
    { batch: 1, graph: true, msPerStep: 2, msPerStepP90: 2.1, tokensPerSecond: 500 },
    { batch: 256, graph: true, msPerStep: 40, msPerStepP90: 41, tokensPerSecond: 6400 },
  ],
  afd: [
    { transport: 'nccl', batch: 1, graph: true, dbo: false, msPerStep: 2.6, tokensPerSecondPerGpu: 192, ratioToColocated: 1.3, mismatchedSteps: 0 },
    { transport: 'nccl', batch: 256, graph: true, dbo: true, msPerStep: 30, tokensPerSecondPerGpu: 4266, ratioToColocated: 0.75, mismatchedSteps: 1 },
    { transport: 'nccl', batch: 512, graph: true, dbo: true, msPerStep: 60, tokensPerSecondPerGpu: 9000 },
    { transport: 'nccl', graphHits: 10, graphMisses: 2, graphCaptures: 2 },
  ],
  fault: { transport: 'nccl', stepDeadlineMs: 5000, failedAfterMs: 120, error: 'lost', failed: true, aliveAfterFault: true, aliveError: '' },
};

describe('evaluateAfdTargets', () => {
  const checks = evaluateAfdTargets(report);
  const byName = (part: string) => checks.find((c) => c.name.includes(part));

  it('checks the graph round trip against 15 us for NCCL', () => {
    expect(byName('round trip in a graph, nccl')).toMatchObject({ measured: 12.7, met: true });
  });

  it('checks the batch-1 ratio against 1.25', () => {
    expect(byName('batch 1, nccl')).toMatchObject({ measured: 1.3, met: false });
  });

  it('compares per-GPU throughput only among rows within the TPOT limit', () => {
    // 512 at 60 ms is over the limit; 4266 per GPU vs 6400 colocated.
    expect(byName('tokens/s per GPU')?.measured).toBeCloseTo(4266 / 6400, 5);
    expect(byName('tokens/s per GPU')?.met).toBe(false);
  });

  it('sums mismatched steps over every mode', () => {
    expect(byName('greedy tokens equal colocated, nccl')).toMatchObject({ measured: 1, met: false });
  });

  it('passes the fault test when the step failed in time and the process stayed usable', () => {
    expect(byName('FFN killed')).toMatchObject({ measured: 120, met: true });
  });
});
