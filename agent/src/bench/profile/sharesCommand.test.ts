/** afd-bench profile-shares on real files: the repository's CPU profile and a copy of it measured "slower". */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCostProfile } from '@afd/shared';
import { withSmShares } from './sharesCommand.js';

const REPO = join(__dirname, '..', '..', '..', '..', 'docs', 'planner', 'profile-cpu-qwen3_moe-tiny.json');

describe('afd-bench profile-shares', () => {
  it('writes a profile that loads back with the measured slowdowns; refuses a malformed --share', () => {
    const dir = mkdtempSync(join(tmpdir(), 'afd-shares-'));
    const full = parseCostProfile(readFileSync(REPO, 'utf8'), REPO);
    const slower = { ...full, attention: full.attention.map((p) => ({ ...p, ms: p.ms * 1.6 })), ffn: full.ffn.map((p) => ({ ...p, ms: p.ms * 1.3 })) };
    const file = join(dir, 'share40.json');
    writeFileSync(file, JSON.stringify(slower));
    const merged = withSmShares(REPO, [`0.4=${file}`]);
    expect(parseCostProfile(JSON.stringify(merged))).toEqual(merged);
    expect(merged.smShares).toEqual([
      { role: 'attention', share: 0.4, slowdown: expect.closeTo(1.6, 6) },
      { role: 'ffn', share: 0.4, slowdown: expect.closeTo(1.3, 6) },
    ]);
    expect(() => withSmShares(REPO, [file])).toThrow(/--share takes share=file/);
    expect(() => withSmShares(REPO, [])).toThrow(/at least one/);
  });
});
