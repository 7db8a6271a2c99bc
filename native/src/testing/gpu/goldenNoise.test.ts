import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadReferenceNoise } from './goldenNoise.js';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

describe('loadReferenceNoise', () => {
  let root = '';
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function setup(files: Record<string, object>): string {
    root = mkdtempSync(join(tmpdir(), 'afd-noise-'));
    const fixtures = join(root, 'fixtures');
    mkdirSync(join(fixtures, 'a'), { recursive: true });
    writeFileSync(join(fixtures, 'a', 'golden.json'), '{"name":"a"}');
    mkdirSync(join(root, 'noise'));
    for (const [name, body] of Object.entries(files)) writeFileSync(join(root, 'noise', name), JSON.stringify(body));
    return fixtures;
  }

  it('merges the files that measured this golden.json: the larger error per step, the union of flips', () => {
    const good = sha('{"name":"a"}');
    const fixtures = setup({
      '1.json': { fixtures: { a: [{ case: 0, errors: [0.1, 0.02], flips: [{ step: 1, margin: 0.2 }] }] }, goldenSha256: { a: good } },
      '2.json': { fixtures: { a: [{ case: 0, errors: [0.05, 0.04], flips: [{ step: 0, margin: 0.1 }] }] }, goldenSha256: { a: good } },
    });
    const notes: string[] = [];
    const n = loadReferenceNoise(fixtures, notes).get('a')!.get(0)!;
    expect(n.errors).toEqual([0.1, 0.04]);
    expect(n.flipSteps).toEqual([0, 1]);
    expect(n.source).toBe('1.json, 2.json');
    expect(notes).toEqual([]);
  });

  it('leaves out a record of another or an unnamed golden.json, and says so', () => {
    const fixtures = setup({
      'old.json': { fixtures: { a: [{ case: 0, errors: [0.1], flips: [] }] }, goldenSha256: { a: sha('other') } },
      'bare.json': { fixtures: { a: [{ case: 0, errors: [0.1], flips: [] }] } },
    });
    const notes: string[] = [];
    expect(loadReferenceNoise(fixtures, notes).get('a')).toBeUndefined();
    expect(notes).toEqual([
      'golden: bare.json measured a on an unnamed golden.json; its noise is not used',
      'golden: old.json measured a on another golden.json; its noise is not used',
    ]);
  });

  it('refuses a file that is not hf_bf16_noise.py output', () => {
    const fixtures = setup({ 'bad.json': { cases: [] } });
    expect(() => loadReferenceNoise(fixtures, [])).toThrow(/bad\.json: no "fixtures" object/);
  });

  it('uses every record of the committed noise for the committed fixtures', () => {
    const notes: string[] = [];
    const noise = loadReferenceNoise(resolve(__dirname, '../../../../tools/golden/fixtures'), notes);
    expect(notes).toEqual([]);
    for (const name of ['qwen3_next_hybrid', 'qwen3_5_moe_hybrid', 'qwen3_moe']) {
      expect([...noise.get(name)!.keys()]).toEqual([0, 1, 2]);
      for (const c of noise.get(name)!.values()) expect(c.errors).toHaveLength(32);
    }
  });
});
