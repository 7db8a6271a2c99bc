/** Test helper: Prometheus text exposition read back into families (type, samples with labels), as a scraper sees it. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  type: string;
  samples: Sample[];
}

/** Families by name (a histogram's _bucket/_sum/_count samples under its own name). */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  let current: Family | undefined;
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      current = { type: type[2]!, samples: [] };
      families.set(type[1]!, current);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || !current) throw new Error(`not a sample line of a typed family: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    current.samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return families;
}

/** A histogram's bucket edges (le, +Inf left out), its count and sum, for one label set. */
export function histogramOf(f: Family, match: Record<string, string> = {}): { edges: number[]; count: number; sum: number } {
  const ours = f.samples.filter((s) => Object.entries(match).every(([k, v]) => s.labels[k] === v));
  const edges = ours.filter((s) => s.name.endsWith('_bucket') && s.labels['le'] !== '+Inf').map((s) => Number(s.labels['le']));
  const value = (suffix: string): number => ours.find((s) => s.name.endsWith(suffix))?.value ?? NaN;
  return { edges, count: value('_count'), sum: value('_sum') };
}
