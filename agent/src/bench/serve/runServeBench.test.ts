/** The serving benchmark against a real HTTP server with a fake engine. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../serving/testing/testServer.js';
import { extraBodyOf } from '../serveCommand.js';
import { formatServeReport } from './report.js';
import { randomRequests } from './randomPrompts.js';
import { runServeBench } from './runServeBench.js';
import { percentile, summarize } from './stats.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ engine: { stepDelayMs: 2 } });
});
afterAll(() => srv.close());

const base = {
  model: undefined,
  endpoint: '/v1/completions',
  apiKey: undefined,
  randomRangeRatio: 0,
  ignoreEos: true,
  seed: 1,
  percentiles: [50, 99],
  temperature: 0,
};

describe('runServeBench', () => {
  it('measures a fixed-concurrency run and reports every metric', async () => {
    let progress = 0;
    const r = await runServeBench({ ...base, baseUrl: srv.url, numPrompts: 12, randomInputLen: 16, randomOutputLen: 8, requestRate: Infinity, maxConcurrency: 4, onProgress: (d) => (progress = d) });
    expect(progress).toBe(12);
    expect(r).toMatchObject({ datasetName: 'random', model: 'tiny', completed: 12, failed: 0, maxConcurrency: 4, requestRate: 'inf', totalOutputTokens: 96 });
    // This test server caches no prefixes, and usage carries cached_tokens only when there are some: no figure.
    expect(r).toMatchObject({ totalCachedTokens: null, cacheHitRatio: null });
    expect(r.totalInputTokens).toBeGreaterThanOrEqual(12 * 16);
    expect(r.outputThroughput).toBeGreaterThan(0);
    expect(r.ttftMs.mean).toBeGreaterThan(0);
    expect(r.tpotMs.median).toBeGreaterThan(0);
    expect(r.itlMs.percentiles['p99']).toBeGreaterThan(0);
    expect(r.e2elMs.mean).toBeGreaterThanOrEqual(r.ttftMs.mean);
    const table = formatServeReport(r);
    expect(table).not.toContain('Multi-turn');
    expect(table).not.toContain('Total cached prompt tokens:'); // no figure without cached tokens
    for (const label of ['Successful requests:', 'Output token throughput (tok/s):', 'Median TTFT (ms):', 'P99 TPOT (ms):', 'Mean ITL (ms):', 'Mean E2EL (ms):']) expect(table).toContain(label);
  });

  it('drives the chat endpoint too', async () => {
    const r = await runServeBench({ ...base, endpoint: '/v1/chat/completions', baseUrl: srv.url, numPrompts: 3, randomInputLen: 8, randomOutputLen: 4, requestRate: Infinity, maxConcurrency: 2 });
    expect(r).toMatchObject({ completed: 3, failed: 0, totalOutputTokens: 12 });
  });

  it('merges --extra-body into every request after its own fields, and reports it', async () => {
    const r = await runServeBench({ ...base, baseUrl: srv.url, numPrompts: 3, randomInputLen: 8, randomOutputLen: 6, requestRate: Infinity, maxConcurrency: 3, extraBody: { max_tokens: 2 } });
    expect(r).toMatchObject({ completed: 3, totalOutputTokens: 6, extraBody: { max_tokens: 2 } });
    expect(formatServeReport(r)).toContain('Extra request body:');
    expect(extraBodyOf(undefined)).toEqual({});
    expect(extraBodyOf('{"n":4}')).toEqual({ n: 4 });
    expect(() => extraBodyOf('[1]')).toThrow('--extra-body must be a JSON object, got [1]');
    expect(() => extraBodyOf('{n')).toThrow(/--extra-body must be a JSON object: /);
  });

  it('paces requests with a request rate and counts failures', async () => {
    const t0 = Date.now();
    const r = await runServeBench({ ...base, baseUrl: srv.url, model: 'wrong', numPrompts: 4, randomInputLen: 4, randomOutputLen: 2, requestRate: 50, maxConcurrency: undefined });
    expect(r.failed).toBe(4);
    expect(r.errors[0]).toMatch(/HTTP 404/);
    expect(Date.now() - t0).toBeGreaterThan(10);
  });
});

describe('bench helpers', () => {
  it('percentiles interpolate like numpy', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5);
    expect(percentile([1, 2, 3, 4], 99)).toBeCloseTo(3.97);
    expect(summarize([2, 4], [99]).mean).toBe(3);
  });
  it('random prompts are deterministic per seed and respect the range ratio', () => {
    expect(randomRequests(3, 10, 5, 7)).toEqual(randomRequests(3, 10, 5, 7));
    const rs = randomRequests(50, 100, 10, 3, 0.5);
    expect(rs.every((r) => r.inputLen >= 50 && r.inputLen <= 150)).toBe(true);
    expect(rs.every((r) => r.prompt.trim().split(' ').length === r.inputLen)).toBe(true);
  });
});
