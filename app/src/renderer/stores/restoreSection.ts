/**
 * Reads a stored config section (from browser storage, maybe written by an older console)
 * back through its shared schema: every stored field the schema accepts is kept, and a
 * field it refuses, or no longer knows, keeps the current value. Works for any section and
 * any new field without a line here.
 */
import type { z } from 'zod';
import { mergeConfigInput } from '@afd/shared';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `input` with the value at `path` taken from `current` (or removed where current has none). */
function resetPath(input: Record<string, unknown>, path: readonly PropertyKey[], current: unknown): Record<string, unknown> {
  const [key, ...rest] = path;
  if (key === undefined) return isPlainObject(current) ? { ...current } : {};
  const name = String(key);
  const here = isPlainObject(current) ? current[name] : undefined;
  const out = { ...input };
  if (rest.length === 0 || !isPlainObject(out[name])) {
    if (here === undefined) delete out[name];
    else out[name] = here;
  } else {
    out[name] = resetPath(out[name] as Record<string, unknown>, rest, here);
  }
  return out;
}

/** The stored section over `current`, validated field by field by `schema`. */
export function restoreSection<T extends object>(schema: z.ZodType<T>, stored: unknown, current: T): T {
  let input: Record<string, unknown> = mergeConfigInput<Record<string, unknown>>({ ...current } as Record<string, unknown>, isPlainObject(stored) ? stored : {});
  // Each round resets every refused field; a field is refused at most once, so this ends.
  for (let round = 0; round < 16; round++) {
    const r = schema.safeParse(input);
    if (r.success) return r.data;
    for (const issue of r.error.issues) {
      const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path;
      input = resetPath(input, path.length > 0 ? path : [], current);
      if (issue.code === 'unrecognized_keys') for (const k of issue.keys.slice(1)) input = resetPath(input, [...issue.path, k], current);
    }
  }
  return current;
}

/** A copy of `value` in which every number that is not finite (a field being typed) is `fallback`'s value at the same place. */
export function finiteOr<T>(value: T, fallback: T): T {
  if (typeof value === 'number') return (Number.isFinite(value) ? value : fallback) as T;
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = finiteOr(v, isPlainObject(fallback) ? fallback[k] : undefined);
  return out as T;
}
