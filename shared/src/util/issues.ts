/**
 * Turns zod issues into errors a user can act on: the field path in dotted form
 * (`dbo.decodeTokenThreshold`, `ffnHosts[1]`) and why the value was rejected.
 */
import type { z } from 'zod';

/** One rejected field. */
export interface FieldIssue {
  /** Dotted path of the field, e.g. `cudaGraph.batchBuckets[2]`; empty for the whole value. */
  path: string;
  /** Why the value was rejected, phrased for a person. */
  message: string;
}

/** Outcome of a parse helper: the value, or every problem found. */
export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: FieldIssue[] };

/** Formats a path like ['dbo', 'enabled'] or ['ffnHosts', 1] as `dbo.enabled` / `ffnHosts[1]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** Converts zod issues to field issues; each unknown key becomes its own issue naming the key. */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        out.push({ path: formatPath([...issue.path, key]), message: 'unknown key (not part of the schema; check its spelling)' });
      }
      continue;
    }
    if (issue.code === 'invalid_key') {
      const inner = issue.issues[0]?.message ?? issue.message;
      out.push({ path: formatPath(issue.path), message: `invalid key: ${inner}` });
      continue;
    }
    out.push({ path: formatPath(issue.path), message: issue.message });
  }
  return out;
}

/** One line per issue: `path: message` (or just the message for the whole value). */
export function formatIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ');
}

/** Runs `schema.safeParse` and returns a ParseResult with field issues. */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown): ParseResult<z.output<S>> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, issues: fieldIssues(parsed.error) };
}
