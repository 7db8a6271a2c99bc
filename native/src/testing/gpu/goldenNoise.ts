/**
 * transformers' own bf16 noise on the golden fixtures, as tools/golden/hf_bf16_noise.py
 * measured it on a GPU host and tools/golden/noise/*.json keeps it: per fixture and case,
 * the norm-wise relative error of the reference model's bf16 logits against its float32
 * logits at each teacher-forced step, and the steps where its bf16 arg-max left the greedy
 * token. goldenRule.ts's reference-noise clause reads it; a fixture without a record is
 * judged by the other two clauses alone.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One case's reference bf16 noise (the largest over the noise files that measured it). */
export interface ReferenceNoise {
  /** Relative error of transformers' bf16 logits against float32, per step. */
  errors: readonly number[];
  /** Steps at which transformers' bf16 arg-max differs from the greedy token. */
  flipSteps: readonly number[];
  /** The noise files it came from, for the suite's detail line. */
  source: string;
}

interface NoiseCase {
  case: number;
  errors: number[];
  flips: { step: number; margin: number }[];
}

interface NoiseFile {
  transformers?: string;
  card?: string;
  fixtures: Record<string, NoiseCase[]>;
  /** sha256 of each measured fixture's golden.json. */
  goldenSha256?: Record<string, string>;
}

function parseNoiseFile(path: string): NoiseFile {
  const data = JSON.parse(readFileSync(path, 'utf8')) as Partial<NoiseFile>;
  if (typeof data.fixtures !== 'object' || data.fixtures === null) throw new Error(`${path}: no "fixtures" object (hf_bf16_noise.py's output)`);
  for (const [name, cases] of Object.entries(data.fixtures)) {
    if (!Array.isArray(cases)) throw new Error(`${path}: fixtures.${name} is not a list of cases`);
    for (const c of cases) {
      if (!Number.isInteger(c.case) || !Array.isArray(c.errors) || !Array.isArray(c.flips)) throw new Error(`${path}: fixtures.${name} holds a case without case / errors / flips`);
    }
  }
  return data as NoiseFile;
}

const sha256Of = (path: string): string | null => (existsSync(path) ? createHash('sha256').update(readFileSync(path)).digest('hex') : null);

/**
 * Every noise file in noiseDirOf(fixturesDir), merged: per fixture name, per case index.
 * Where several files measured a case, each step keeps the largest error and the union of
 * the flip steps. A record is used only for the golden.json it measured (its sha256); any
 * other is left out and named in `notes`. An absent folder is an empty map.
 */
export function loadReferenceNoise(fixturesDir: string, notes: string[]): Map<string, Map<number, ReferenceNoise>> {
  const out = new Map<string, Map<number, ReferenceNoise>>();
  const dir = noiseDirOf(fixturesDir);
  if (!existsSync(dir)) return out;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const data = parseNoiseFile(join(dir, file));
    for (const [name, cases] of Object.entries(data.fixtures)) {
      const measured = data.goldenSha256?.[name];
      if (measured === undefined || measured !== sha256Of(join(fixturesDir, name, 'golden.json'))) {
        notes.push(`golden: ${file} measured ${name} on ${measured === undefined ? 'an unnamed golden.json' : 'another golden.json'}; its noise is not used`);
        continue;
      }
      const byCase = out.get(name) ?? new Map<number, ReferenceNoise>();
      out.set(name, byCase);
      for (const c of cases) {
        const prior = byCase.get(c.case);
        const errors = c.errors.map((e, s) => Math.max(e, prior?.errors[s] ?? 0));
        const flipSteps = [...new Set([...(prior?.flipSteps ?? []), ...c.flips.map((f) => f.step)])].sort((a, b) => a - b);
        byCase.set(c.case, { errors, flipSteps, source: prior ? `${prior.source}, ${file}` : file });
      }
    }
  }
  return out;
}

/** The noise folder beside a fixtures folder (tools/golden/fixtures -> tools/golden/noise). */
export const noiseDirOf = (fixturesDir: string): string => join(fixturesDir, '..', 'noise');
