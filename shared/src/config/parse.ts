/**
 * Parse helpers for the AFD config and the rank config: every error names the field path
 * and why.
 */
import { afdConfigSchema, type AfdConfig } from './afdConfig.js';
import { rankConfigSchema, type RankConfig, type RankConfigInput } from './rankConfig.js';
import { formatIssues, parseWith, type FieldIssue, type ParseResult } from '../util/issues.js';

/** Validates an AFD config object and fills defaults. */
export function parseAfdConfig(input: unknown): ParseResult<AfdConfig> {
  return parseWith(afdConfigSchema, input);
}

/** Parses an AFD config from JSON text (a `--config` value or file contents). */
export function parseAfdConfigJson(text: string): ParseResult<AfdConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, issues: [{ path: '', message: `not valid JSON (${(err as Error).message})` }] };
  }
  return parseAfdConfig(raw);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Layers overrides (e.g. explicit CLI flags) over a base config input, at any depth: plain
 * objects merge key by key, everything else (arrays, values, a topology in either form)
 * is replaced; undefined override values are skipped. Validate the result with the schema.
 */
export function mergeConfigInput<T extends object>(base: T, overrides: T): T {
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    const prev = out[key];
    // A nested object merges into what is there (or into nothing), so its undefined fields are skipped too.
    out[key] = isPlainObject(value) && key !== 'topology' ? mergeConfigInput<Record<string, unknown>>(isPlainObject(prev) ? prev : {}, value) : value;
  }
  return out as T;
}

/** Thrown by resolveRankConfig; `issues` lists each bad field (paths from the rank config's root, e.g. "afd.rank"). */
export class RankConfigError extends Error {
  constructor(readonly issues: FieldIssue[]) {
    super(`invalid rank config: ${formatIssues(issues)}`);
    this.name = 'RankConfigError';
  }
}

/** Validates a rank config object and fills every default. */
export function parseRankConfig(input: unknown): ParseResult<RankConfig> {
  return parseWith(rankConfigSchema, input);
}

/** Like parseRankConfig, but throws RankConfigError. */
export function resolveRankConfig(input: RankConfigInput | unknown): RankConfig {
  const result = parseRankConfig(input);
  if (!result.ok) throw new RankConfigError(result.issues);
  return result.value;
}
