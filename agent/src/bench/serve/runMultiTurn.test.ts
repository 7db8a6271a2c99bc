/** The multi-turn dataset against a real HTTP server (fake engine), with prefix caching on and off. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../../serving/testing/testServer.js';
import { datasetOf, registerServeBench } from '../serveCommand.js';
import { formatServeReport } from './report.js';
import { runMultiTurnBench, type MultiTurnBenchOptions } from './runMultiTurn.js';

let cached: TestServer;
let uncached: TestServer;
beforeAll(async () => {
  [cached, uncached] = await Promise.all([
    startTestServer({ engine: { stepDelayMs: 1 }, serving: { prefixCaching: true } }),
    startTestServer({ engine: { stepDelayMs: 1 }, serving: { prefixCaching: false } }),
  ]);
});
afterAll(async () => {
  await Promise.all([cached.close(), uncached.close()]);
});

const options = (baseUrl: string): MultiTurnBenchOptions => ({
  baseUrl,
  model: undefined,
  endpoint: '/v1/chat/completions',
  apiKey: undefined,
  requestRate: Infinity,
  maxConcurrency: 2,
  ignoreEos: true,
  seed: 3,
  percentiles: [50, 99],
  temperature: 0,
  sharedPrefixLen: 40,
  numConversations: 3,
  turns: 3,
  turnInputLen: 8,
  turnOutputLen: 6,
});

describe('runMultiTurnBench', () => {
  it('runs every turn of every conversation; with prefix caching every turn >= 2 reports cached tokens', async () => {
    let progress = 0;
    const r = await runMultiTurnBench({ ...options(cached.url), onProgress: (d) => (progress = d) });
    expect(progress).toBe(9);
    expect(r).toMatchObject({ datasetName: 'multi-turn', model: 'tiny', numPrompts: 9, completed: 9, failed: 0, maxConcurrency: 2, totalOutputTokens: 54 });
    const m = r.multiTurn!;
    expect(m).toMatchObject({ sharedPrefixLen: 40, numConversations: 3, turns: 3, turnInputLen: 8, turnOutputLen: 6, lengthsChecked: true, completedConversations: 3, turnsNotSent: 0 });
    expect(m.firstTurn.requests).toBe(3);
    expect(m.laterTurns.requests).toBe(6);
    expect(m.laterTurns.cachedTokens).toBeGreaterThan(0);
    expect(m.laterTurns.requestsWithHits).toBe(6);
    expect(m.laterTurns.hitRatio).toBeGreaterThan(0.5);
    expect(m.perTurn.map((t) => t.turn)).toEqual([1, 2, 3]);
    for (const t of m.perTurn.slice(1)) expect(t.cachedTokens).toBeGreaterThan(0);
    // Each turn resends the history: prompts grow by a user message and an answer per turn.
    expect(m.perTurn[1]!.promptTokens / 3).toBeGreaterThan(m.perTurn[0]!.promptTokens / 3 + 8);
    expect(r.totalCachedTokens).toBe((m.firstTurn.cachedTokens ?? 0) + m.laterTurns.cachedTokens!);
    expect(r.cacheHitRatio).toBeCloseTo(r.totalCachedTokens! / r.totalInputTokens);
    // The --json-out document carries the per-turn fields.
    const json = JSON.parse(JSON.stringify(r)) as Record<string, unknown> & { multiTurn: Record<string, unknown> };
    for (const k of ['totalCachedTokens', 'cacheHitRatio', 'outputThroughput', 'ttftMs']) expect(json).toHaveProperty(k);
    for (const k of ['firstTurn', 'laterTurns', 'perTurn']) expect(json.multiTurn).toHaveProperty(k);
    expect(json.multiTurn['laterTurns']).toHaveProperty('ttftMs.median');
    expect(json.multiTurn['laterTurns']).toHaveProperty('ttftMs.percentiles.p99');
    const table = formatServeReport(r);
    for (const label of ['Dataset:', 'Total cached prompt tokens:', 'Turn 1 (cold: only the system prompt hits)', 'Turns >= 2 (the history hits)', 'Per turn: mean TTFT', 'Output token throughput (tok/s):']) expect(table).toContain(label);
  });

  it('with prefix caching off the server reports no cached tokens', async () => {
    const r = await runMultiTurnBench({ ...options(uncached.url), numConversations: 2, turns: 2, maxConcurrency: undefined });
    // usage carries prompt_tokens_details only when tokens were cached (as vLLM): none here, so no figure.
    expect(r).toMatchObject({ completed: 4, failed: 0, totalCachedTokens: null, cacheHitRatio: null });
    expect(r.multiTurn!.laterTurns).toMatchObject({ requests: 2, cachedTokens: null, requestsWithHits: null });
  });

  it('refuses a non-chat endpoint, and a failed turn ends its conversation', async () => {
    await expect(runMultiTurnBench({ ...options(cached.url), endpoint: '/v1/completions' })).rejects.toThrow('--endpoint must be /v1/chat/completions');
    const r = await runMultiTurnBench({ ...options(cached.url), model: 'wrong', numConversations: 2 });
    expect(r).toMatchObject({ completed: 0, failed: 2 });
    expect(r.multiTurn).toMatchObject({ completedConversations: 0, turnsNotSent: 4 });
    expect(r.errors[0]).toMatch(/HTTP 404/);
  });
});

describe('afd-bench serve --dataset-name multi-turn', () => {
  it('parses the flags and writes the per-turn fields to --json-out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'afd-mt-'));
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const program = new Command().exitOverride();
      registerServeBench(program);
      const flags = ['--dataset-name', 'multi-turn', '--shared-prefix-len', '20', '--num-conversations', '2', '--turns', '2', '--turn-input-len', '5', '--turn-output-len', '3'];
      await program.parseAsync(['serve', '--base-url', cached.url, ...flags, '--max-concurrency', '2', '--ignore-eos', '--no-progress', '--json-out', join(dir, 'r.json')], { from: 'user' });
      const r = JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')) as Record<string, unknown>;
      expect(r).toMatchObject({ datasetName: 'multi-turn', completed: 4, totalOutputTokens: 12, multiTurn: { sharedPrefixLen: 20, numConversations: 2, turns: 2, turnInputLen: 5, turnOutputLen: 3, lengthsChecked: true } });
      expect(r).toHaveProperty('multiTurn.laterTurns.ttftMs.mean');
      expect(r).toHaveProperty('multiTurn.perTurn.1.cachedTokens');
      expect(String(out.mock.calls[0]?.[0])).toContain('Turns >= 2 (the history hits)');
      await expect(program.parseAsync(['serve', '--base-url', cached.url, '--dataset-name', 'multi-turn', '--num-prompts', '3'], { from: 'user' })).rejects.toThrow('--num-prompts is a flag of the random dataset');
    } finally {
      out.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('datasetOf (--dataset-name)', () => {
  it("accepts random and multi-turn, and refuses the other dataset's flags", () => {
    expect(datasetOf('random', () => false)).toBe('random');
    expect(datasetOf('multi-turn', (a) => a === 'turns')).toBe('multi-turn');
    expect(() => datasetOf('sharegpt', () => false)).toThrow('--dataset-name must be random or multi-turn, got "sharegpt"');
    expect(() => datasetOf('multi-turn', (a) => a === 'numPrompts')).toThrow('--num-prompts is a flag of the random dataset, not of multi-turn');
    expect(() => datasetOf('random', (a) => a === 'sharedPrefixLen')).toThrow('--shared-prefix-len is a flag of the multi-turn dataset, not of random');
  });
});
