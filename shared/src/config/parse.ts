/**
 * Parse helpers for the AFD config: every error names the field path and why.
 */
import { afdConfigSchema, type AfdConfig, type AfdConfigInput } from './afdConfig.js';
import { formatIssues, parseWith, type FieldIssue, type ParseResult } from '../util/issues.js';

/** Thrown by resolveAfdConfig; `issues` lists each bad field. */
export class AfdConfigError extends Error {
  constructor(
    /** Every rejected field with the reason. */
    readonly issues: FieldIssue[],
  ) {
    super(`invalid AFD config: ${formatIssues(issues)}`);
    this.name = 'AfdConfigError';
  }
}

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

/** Like parseAfdConfig, but throws AfdConfigError. */
export function resolveAfdConfig(input: unknown): AfdConfig {
  const result = parseAfdConfig(input);
  if (!result.ok) throw new AfdConfigError(result.issues);
  return result.value;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Layers overrides (e.g. explicit CLI flags) over a base config input: nested objects
 * (dbo, cudaGraph, ncclEnv) merge key by key, everything else is replaced; undefined
 * override values are skipped. Validate the result with parseAfdConfig.
 */
export function mergeAfdConfig(base: AfdConfigInput, overrides: AfdConfigInput): AfdConfigInput {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    const prev = out[key];
    out[key] = isPlainObject(prev) && isPlainObject(value) && key !== 'topology' ? { ...prev, ...value } : value;
  }
  return out as AfdConfigInput;
}
