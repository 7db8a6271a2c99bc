import { describe, expect, it } from 'vitest';
import { computeMessageStats, requestStage } from './streamStats.js';

describe('computeMessageStats', () => {
  it('derives TTFT, decode rate and inter-token latency', () => {
    const s = computeMessageStats({ chunkTimesMs: [100, 110, 120, 130, 140], endMs: 150 });
    expect(s.ttftMs).toBe(100);
    expect(s.numOutputTokens).toBe(5);
    expect(s.meanItlMs).toBeCloseTo(10);
    expect(s.decodeTokensPerSecond).toBeCloseTo(100);
    expect(s.p95ItlMs).toBe(10);
    expect(s.totalMs).toBe(150);
  });

  it('prefers the usage count over the chunk count', () => {
    const s = computeMessageStats({ chunkTimesMs: [50, 150], usageCompletionTokens: 11, usagePromptTokens: 7, endMs: 160 });
    expect(s.numOutputTokens).toBe(11);
    expect(s.decodeTokensPerSecond).toBeCloseTo(100);
    expect(s.numPromptTokens).toBe(7);
  });

  it('leaves rates undefined without enough tokens', () => {
    expect(computeMessageStats({ chunkTimesMs: [], endMs: 10 }).ttftMs).toBeUndefined();
    const one = computeMessageStats({ chunkTimesMs: [42], endMs: 50 });
    expect(one.ttftMs).toBe(42);
    expect(one.decodeTokensPerSecond).toBeUndefined();
  });

  it('p95 picks the slow gaps', () => {
    const times = [0];
    for (let i = 1; i <= 100; i++) times.push(times[i - 1]! + (i % 10 === 0 ? 50 : 5));
    const s = computeMessageStats({ chunkTimesMs: times, endMs: 1000 });
    expect(s.p95ItlMs).toBe(50);
  });
});

describe('requestStage', () => {
  it('moves queued -> prefill -> decode -> done', () => {
    expect(requestStage(false, 0, false)).toBe('queued');
    expect(requestStage(true, 0, false)).toBe('prefill');
    expect(requestStage(true, 3, false)).toBe('decode');
    expect(requestStage(true, 3, true)).toBe('done');
  });
});
