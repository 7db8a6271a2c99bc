/** The incremental JSON scanner: it accepts what JSON.parse accepts, and says where values begin and end. */
import { describe, expect, it } from 'vitest';
import { JsonScanner, type JsonScanEvent } from './JsonScanner.js';

function scan(text: string): { done: boolean; failed: boolean; events: (JsonScanEvent & { at: number })[] } {
  const s = new JsonScanner();
  const events: (JsonScanEvent & { at: number })[] = [];
  [...text].forEach((c, at) => events.push(...s.push(c).map((e) => ({ ...e, at }))));
  events.push(...s.end().map((e) => ({ ...e, at: text.length })));
  return { done: s.done, failed: s.failed, events };
}

describe('JsonScanner', () => {
  it('agrees with JSON.parse on what is one JSON value', () => {
    const valid = ['{}', '[]', ' {"a": [1, -2.5e+3, true, false, null, "x\\"\\u00e9\\n"]} ', '"s"', '0', '-0.5', '{"a":{"b":{"c":[[]]}}}', '"世界"'];
    const invalid = ['{a: 1}', '[1,]', '{"a" 1}', '01', '1.', '"\\x"', '"\\u12G4"', 'tru', '{"a": 1}}', '"a\nb"', '[1 2]', '{,}'];
    for (const t of valid) expect(scan(t), t).toMatchObject({ done: true, failed: false });
    for (const t of invalid) {
      let parses = true;
      try {
        JSON.parse(t);
      } catch {
        parses = false;
      }
      expect(parses, t).toBe(false);
      expect(scan(t).done && !scan(t).failed, t).toBe(false);
    }
  });

  it('reports each value\'s start and end with depth and key; a number ends at the character after it', () => {
    const { events } = scan('{"n": 12, "o": {"k": [true]}}');
    const at = (kind: string, depth: number, key: string | null) => events.filter((e) => e.kind === kind && 'depth' in e && e.depth === depth && e.key === key).map((e) => e.at);
    expect(at('start', 0, null)).toEqual([0]);
    expect(at('start', 1, 'n')).toEqual([6]);
    expect(events.find((e) => e.kind === 'end' && e.key === 'n')).toMatchObject({ at: 8, inclusive: false });
    expect(at('start', 1, 'o')).toEqual([15]);
    expect(at('end', 1, 'o')).toEqual([27]);
    expect(at('start', 2, 'k')).toEqual([21]);
    expect(at('end', 0, null)).toEqual([28]);
  });
});
