/**
 * Merges Prometheus text from several ranks into one exposition: each family's HELP/TYPE
 * once, and every sample with an extra label naming its source (e.g. backend="1").
 */

/** Adds `label="value"` to one sample line (`name{a="b"} 1` or `name 1`). */
export function addLabel(line: string, label: string, value: string): string {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(.*)$/.exec(line);
  if (!m) return line;
  const [, name, , labels, rest] = m;
  const extra = `${label}="${value.replace(/["\\\n]/g, '_')}"`;
  return `${name}{${labels ? `${labels},${extra}` : extra}} ${rest}`;
}

export function mergeExpositions(sources: { label: string; value: string; text: string }[]): string {
  /** family name -> header lines and samples, in first-seen order. */
  const families = new Map<string, { header: string[]; samples: string[] }>();
  for (const src of sources) {
    let current: { header: string[]; samples: string[] } | undefined;
    for (const line of src.text.split('\n')) {
      if (line.trim() === '') continue;
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (meta) {
        const name = meta[2]!;
        let fam = families.get(name);
        if (!fam) {
          fam = { header: [], samples: [] };
          families.set(name, fam);
        }
        if (!fam.header.some((h) => h.startsWith(`# ${meta[1]} `))) fam.header.push(line);
        current = fam;
        continue;
      }
      if (line.startsWith('#')) continue;
      if (!current) {
        const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? line;
        current = families.get(name) ?? { header: [], samples: [] };
        families.set(name, current);
      }
      current.samples.push(addLabel(line, src.label, src.value));
    }
  }
  const out: string[] = [];
  for (const fam of families.values()) out.push(...fam.header, ...fam.samples);
  return `${out.join('\n')}\n`;
}
