import { describe, expect, it } from 'vitest';
import { cpuSlowdowns, parseSharedDevice } from './sharedDevice.js';
import { simulateAfd, simulateColocated } from './stepSimulator.js';
import { linearCosts } from './testCosts.js';

const w = { batchPerRank: 4, context: 1 };

describe('ranks sharing a CPU: closed-form cases', () => {
  it('overlap of compute intervals: two on one core run at half speed, on two cores at full', () => {
    const two = [{ start: 0, end: 1, copies: 1 }, { start: 0, end: 1, copies: 1 }];
    expect(cpuSlowdowns(two, 1)).toEqual([2, 2]);
    expect(cpuSlowdowns(two, 2)).toEqual([1, 1]);
    // half overlapping: each is busy 2 for half its time -> mean 1.5
    expect(cpuSlowdowns([{ start: 0, end: 2, copies: 1 }, { start: 1, end: 3, copies: 1 }], 1)).toEqual([1.5, 1.5]);
    expect(cpuSlowdowns([{ start: 0, end: 1, copies: 3 }], 2)).toEqual([1.5]);
  });

  it('two equal ranks on one core take twice as long; on two cores, unchanged', () => {
    const c = linearCosts(6, 0.5, 0.25, 0.1);
    const shape = { attention: 2, ffn: 2, stages: 1 };
    const own = simulateAfd(c, shape, w);
    expect(simulateAfd(c, shape, w, { device: { kind: 'cpu', cores: 1 } }).tpotMs).toBeCloseTo(own.tpotMs + 6 * (2 + 1), 6); // compute doubled, the link not
    expect(simulateAfd(c, shape, w, { device: { kind: 'cpu', cores: 2 } }).tpotMs).toBeCloseTo(own.tpotMs, 9);
  });

  it('1A1F without overlap on one core: attention and FFN alternate, nothing slows', () => {
    const c = linearCosts(4, 0.5, 0.25, 0.1);
    const shape = { attention: 1, ffn: 1, stages: 1 };
    expect(simulateAfd(c, shape, w, { device: { kind: 'cpu', cores: 1 } }).tpotMs).toBeCloseTo(simulateAfd(c, shape, w).tpotMs, 9);
  });

  it('2A1F on one core: both attention ranks at half speed, the FFN alone at full', () => {
    const c = linearCosts(3, 0.5, 0.25);
    // per layer: attention 2 x 2 ms (two ranks sharing), FFN of 8 rows 2 ms
    expect(simulateAfd(c, { attention: 2, ffn: 1, stages: 1 }, w, { device: { kind: 'cpu', cores: 1 } }).tpotMs).toBeCloseTo(3 * (4 + 2), 6);
  });

  it('colocated replicas on fewer cores than replicas slow by replicas / cores', () => {
    const c = linearCosts(2, 0.5, 0.25);
    expect(simulateColocated(c, w, { device: { kind: 'cpu', cores: 2 }, replicas: 4 }).tpotMs).toBeCloseTo(2 * simulateColocated(c, w).tpotMs, 9);
    expect(simulateColocated(c, w, { device: { kind: 'cpu', cores: 8 }, replicas: 4 }).tpotMs).toBeCloseTo(simulateColocated(c, w).tpotMs, 9);
  });
});

describe('ranks sharing a GPU under MPS', () => {
  const c = linearCosts(5, 0.5, 0.25, 0.1);
  const shape = { attention: 1, ffn: 1, stages: 1 };
  it('share 1.0 is unchanged; half the SMs doubles a compute-bound half (alpha 1) and leaves a memory-bound one (alpha 0)', () => {
    const own = simulateAfd(c, shape, w).tpotMs;
    expect(simulateAfd(c, shape, w, { device: parseSharedDevice('mps:attention=100,ffn=100') }).tpotMs).toBeCloseTo(own, 9);
    expect(simulateAfd(c, shape, w, { device: parseSharedDevice('mps:attention=50,ffn=100') }).tpotMs).toBeCloseTo(own + 5 * 2, 9);
    expect(simulateAfd(c, shape, w, { device: parseSharedDevice('mps:attention=50,ffn=25,alpha=0') }).tpotMs).toBeCloseTo(own, 9);
    expect(simulateAfd(c, shape, w, { device: parseSharedDevice('mps:attention=100,ffn=25,alpha=0.5') }).tpotMs).toBeCloseTo(own + 5 * 1, 9);
  });

  it("the profile's measured slowdown wins over the alpha law, and the GPUs are the attention ranks", () => {
    const measured = linearCosts(5, 0.5, 0.25, 0.1, 0, { smSlowdown: (role) => (role === 'attention' ? 1.5 : 1) });
    const r = simulateAfd(measured, { attention: 2, ffn: 1, stages: 1 }, w, { device: parseSharedDevice('mps:attention=40,ffn=60') });
    expect(r.tpotMs).toBeCloseTo(simulateAfd(measured, { attention: 2, ffn: 1, stages: 1 }, w).tpotMs + 5 * 1, 9);
    expect(r.gpus).toBe(2);
  });

  it('parses specs and says what is wrong', () => {
    expect(parseSharedDevice('cpu:2')).toEqual({ kind: 'cpu', cores: 2 });
    expect(parseSharedDevice('mps:attention=40,ffn=60')).toEqual({ kind: 'mps', attentionShare: 0.4, ffnShare: 0.6, alpha: 1 });
    expect(() => parseSharedDevice('cpu:0')).toThrow(/positive number of cores/);
    expect(() => parseSharedDevice('mps:attention=40')).toThrow(/ffn=<percent of the SMs/);
    expect(() => parseSharedDevice('mps:attention=40,ffn=60,alpha=2')).toThrow(/alpha must be within 0\.\.1/);
    expect(() => parseSharedDevice('tpu:4')).toThrow(/takes cpu:<cores> or mps:/);
  });
});
