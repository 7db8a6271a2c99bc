/**
 * `afd-bench grammar` on a small configuration through real grammar workers: the report
 * has every measurement, in its units, and the text report shows them.
 */
import { describe, expect, it } from 'vitest';
import { agentScript } from '../testing/agentBundle.js';
import { qwenTokenizerDir } from '../serving/testing/qwenTokenizer.js';
import { flatSchema, formatGrammarBench, runGrammarBench, stats } from './grammarBench.js';

describe('grammar bench', () => {
  it('stats and schemas', () => {
    expect(stats([5, 1, 3, 2, 4])).toEqual({ median: 3, p90: 5, min: 1, max: 5, n: 5 });
    const s = flatSchema('t', 4) as { properties: Record<string, { type: string }>; required: string[] };
    expect(Object.values(s.properties).map((p) => p.type)).toEqual(['string', 'integer', 'boolean', 'string']);
    expect(s.required).toEqual(['t_field_0', 't_field_1', 't_field_2', 't_field_3']);
  });

  it('measures start, cold and cached compiles and masks by batch size', async () => {
    const r = await runGrammarBench({ script: await agentScript(), modelDir: qwenTokenizerDir(), vocabSize: 151_936, stopTokenIds: [151_645], fields: 5, schemas: 2, steps: 4, batches: [1, 3] });
    expect(r.vocabType).toBe('byte_level');
    expect(r.startup.loadMs).toBeGreaterThan(0);
    for (const mode of [r.cold.anyWhitespace, r.cold.fixedWhitespace]) {
      expect(mode.wall.n).toBe(2);
      expect(mode.compile.median).toBeGreaterThan(0);
      expect(mode.first.wallMs).toBeGreaterThan(0);
    }
    expect(r.cachedWall.n).toBe(30);
    expect(r.cachedWall.median).toBeLessThan(r.cold.anyWhitespace.wall.median);
    expect(r.masks.map((m) => [m.batch, m.wall.n])).toEqual([[1, 4], [3, 4]]);
    expect(r.masks.every((m) => m.perRowUs > 0)).toBe(true);
    const text = formatGrammarBench(r);
    expect(text).toMatch(/cold compile, anyWhitespace: wall median/);
    expect(text).toMatch(/masks, batch 3: wall median/);
  }, 120_000);
});
