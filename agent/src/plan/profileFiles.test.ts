import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { PLAN_PROFILE_MAX_BYTES, planProfilesResultSchema } from '@afd/shared';
import { findRepoProfile, listPlanProfiles, REPO_PROFILE } from './profileFiles.js';

const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'afd-profiles-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('plan.profiles', () => {
  it("lists the home's profiles by name, then the repository's, as text", () => {
    const home = tmp();
    mkdirSync(join(home, 'profiles'));
    writeFileSync(join(home, 'profiles', 'b.json'), '{"version":1}');
    writeFileSync(join(home, 'profiles', 'a.json'), 'not json');
    writeFileSync(join(home, 'profiles', 'notes.txt'), 'x');
    mkdirSync(join(home, 'profiles', 'dir.json'));
    writeFileSync(join(home, 'profiles', 'huge.json'), 'x'.repeat(PLAN_PROFILE_MAX_BYTES + 1));
    const r = listPlanProfiles({ home, repoProfile: '/nowhere/profile.json' });
    expect(planProfilesResultSchema.safeParse(r).success).toBe(true);
    expect(r.profiles.map((p) => [p.name, p.origin, p.text])).toEqual([
      ['a.json', 'home', 'not json'],
      ['b.json', 'home', '{"version":1}'],
    ]);
    expect(r.skipped.map((s) => s.path.slice(s.path.lastIndexOf('/') + 1))).toEqual(['dir.json', 'huge.json', 'profile.json']);
    expect(r.skipped[1]!.reason).toMatch(/over the 1048576/);
  });

  it("no profiles folder: only the repository's profiles, the CPU one found above the checkout and the measured ones beside it", () => {
    const found = findRepoProfile([fileURLToPath(new URL('.', import.meta.url))]);
    expect(found).not.toBeNull();
    expect(found!.endsWith(REPO_PROFILE)).toBe(true);
    const r = listPlanProfiles({ home: tmp(), repoProfile: found });
    expect(r.profiles.map((p) => [p.name, p.origin])).toEqual([
      ['profile-cpu-qwen3_moe-tiny.json', 'repo'],
      ['profile-cuda-h100-qwen3-30b-a3b.json', 'repo'],
    ]);
    expect(JSON.parse(r.profiles[1]!.text)).toMatchObject({ backend: 'cuda', device: 'NVIDIA H100 80GB HBM3' });
    expect(JSON.parse(r.profiles[0]!.text).version).toBe(1);
    expect(findRepoProfile([tmp()])).toBeNull();
  });
});
