import { describe, expect, it } from 'vitest';
import { prefillRanksOf, resolveTopology, toSpec, topologySchema, validateTopology, TopologyError, TOPOLOGY_RULES } from './spec.js';

describe('topology names', () => {
  it('parses xAyF case-insensitively with surrounding spaces', () => {
    for (const name of ['3A2F', '3a2f', ' 3A2f ', '3 A 2 F']) {
      const t = resolveTopology(name);
      expect(t.name).toBe('3A2F');
      expect(t.attention).toEqual({ ranks: 3, dp: 3, tp: 1 });
      expect(t.ffn).toEqual({ ranks: 2, dp: 2, tp: 1 });
      expect(t.worldSize).toBe(5);
    }
  });

  it('accepts and rejects every x, y in 0..16 by the rules', () => {
    for (let x = 0; x <= 16; x++) {
      for (let y = 0; y <= 16; y++) {
        const result = validateTopology(`${x}A${y}F`);
        if (x > 0 && y > 0 && x >= y) {
          expect(result.ok, `${x}A${y}F`).toBe(true);
          if (result.ok) expect(result.topology.worldSize).toBe(x + y);
        } else {
          expect(result.ok, `${x}A${y}F`).toBe(false);
          if (!result.ok) {
            const text = result.problems.join(' ');
            if (x === 0 || y === 0) expect(text).toContain('positive-sizes');
            else expect(text).toContain('attention-ge-ffn');
          }
        }
      }
    }
  });

  it('rejects malformed names with the syntax rule', () => {
    for (const bad of ['', 'AF', '2A', '2F2A', '2A2F1', '-1A1F', '1.5A1F', 'twoAoneF', '2A2FF', '2x2']) {
      const r = validateTopology(bad);
      expect(r.ok, bad).toBe(false);
      if (!r.ok) expect(r.problems[0]).toContain('topology-syntax');
    }
  });

  it('throws TopologyError listing the broken rule', () => {
    expect(() => resolveTopology('1A2F')).toThrow(TopologyError);
    expect(() => resolveTopology('1A2F')).toThrow(/1 attention rank is fewer than 2 FFN ranks.*attention-ge-ffn/);
  });

  it('rejects a role over the rank limit', () => {
    const r = validateTopology('2000A1F');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]).toContain('max-ranks');
  });
});

describe('structured topology specs', () => {
  it('derives ranks = dp x tp and defaults tp to 1', () => {
    const t = resolveTopology({ attention: { dp: 4, tp: 1 }, ffn: { dp: 2 } });
    expect(t.name).toBe('4A2F');
    expect(t.attention).toEqual({ ranks: 4, dp: 4, tp: 1 });
    expect(t.ffn).toEqual({ ranks: 2, dp: 2, tp: 1 });
  });

  it('derives dp from ranks and tp', () => {
    const t = resolveTopology({ attention: { ranks: 6, tp: 1 }, ffn: { ranks: 2 } });
    expect(t.attention).toEqual({ ranks: 6, dp: 6, tp: 1 });
    expect(t.ffn).toEqual({ ranks: 2, dp: 2, tp: 1 });
  });

  it('refuses tp > 1 (not implemented), saying how to get the same rank count with dp', () => {
    const r = validateTopology({ attention: { dp: 2, tp: 2 }, ffn: { ranks: 2, tp: 2 } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problems).toEqual([
        `attention.tp is 2 (${TOPOLOGY_RULES.tpNotImplemented}): for the same 4 attention ranks give attention: { dp: 4 } (tp 1), or the name "4A2F", and each rank runs as a data-parallel replica`,
        `ffn.tp is 2 (${TOPOLOGY_RULES.tpNotImplemented}): for the same 2 ffn ranks give ffn: { dp: 2 } (tp 1), or the name "4A2F", and each rank runs as a data-parallel replica; enableExpertParallel splits the MoE experts over the FFN ranks`,
      ]);
    }
    expect(() => resolveTopology({ attention: { ranks: 6, tp: 2 }, ffn: { ranks: 2 } })).toThrow('tensor parallelism (tp > 1) is not implemented yet');
  });

  it('accepts every dp in 1..4 per role when x >= y with tp 1, refuses any tp > 1, and checks dp x tp', () => {
    for (let adp = 1; adp <= 4; adp++)
      for (let atp = 1; atp <= 4; atp++)
        for (let fdp = 1; fdp <= 4; fdp++)
          for (let ftp = 1; ftp <= 4; ftp++) {
            const spec = { attention: { dp: adp, tp: atp }, ffn: { dp: fdp, tp: ftp } };
            const r = validateTopology(spec);
            expect(r.ok).toBe(adp * atp >= fdp * ftp && atp === 1 && ftp === 1);
            if (!r.ok && adp * atp >= fdp * ftp) expect(r.problems.join(' ')).toContain('tp-not-implemented');
            const mismatch = validateTopology({ attention: { ranks: adp * atp + 1, dp: adp, tp: atp }, ffn: { ranks: 1 } });
            expect(mismatch.ok).toBe(false);
            if (!mismatch.ok) expect(mismatch.problems.join(' ')).toMatch(/dp-x-tp|not divisible/);
          }
  });

  it('names the field and the rule for non-positive or fractional sizes', () => {
    const r = validateTopology({ attention: { dp: 0, tp: 1.5 }, ffn: { ranks: -2 } });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problems).toEqual([
        `attention.dp is 0 (${TOPOLOGY_RULES.positive})`,
        `attention.tp is 1.5 (${TOPOLOGY_RULES.positive})`,
        `ffn.ranks is -2 (${TOPOLOGY_RULES.positive})`,
      ]);
    }
  });

  it('rejects an empty role, ranks not divisible by tp, unknown keys and wrong types', () => {
    expect(validateTopology({ attention: {}, ffn: { ranks: 1 } }).ok).toBe(false);
    const r = validateTopology({ attention: { ranks: 3, tp: 2 }, ffn: { ranks: 1 } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]).toContain('not divisible');
    expect(validateTopology({ attention: { ranks: 2, pp: 2 }, ffn: { ranks: 1 } }).ok).toBe(false);
    expect(validateTopology({ attention: { ranks: '2' }, ffn: { ranks: 1 } }).ok).toBe(false);
    expect(validateTopology(42).ok).toBe(false);
    expect(validateTopology(null).ok).toBe(false);
  });

  it('round-trips through toSpec and accepts a resolved topology', () => {
    const t = resolveTopology({ attention: { dp: 3, tp: 1 }, ffn: { dp: 2, tp: 1 } });
    expect(resolveTopology(toSpec(t))).toEqual(t);
    expect(resolveTopology(t)).toEqual(t);
  });

  it('refuses a resolved topology whose name or world size disagrees with its ranks', () => {
    const t = resolveTopology('3A2F');
    expect(validateTopology({ ...t, name: '3a2f' }).ok).toBe(true);
    expect(validateTopology({ ...t, name: '2A2F' })).toEqual({ ok: false, problems: ['topology name "2A2F" does not match its ranks (3A2F)'] });
    expect(validateTopology({ ...t, worldSize: 4 })).toEqual({ ok: false, problems: ['topology worldSize 4 is not attention + FFN ranks = 5'] });
    expect(validateTopology({ ...t, ffn: { ranks: 4, dp: 4, tp: 1 }, name: '3A4F', worldSize: 7 }).ok).toBe(false);
    const partial = validateTopology({ name: '3A2F', attention: { ranks: 3 }, ffn: t.ffn, worldSize: 5 });
    expect(partial.ok === false && partial.problems[0]).toMatch(/^expected a resolved topology .*attention\.dp/);
  });

  it('topologySchema resolves at the boundary: name, spec or resolved topology in, Topology out', () => {
    const t = resolveTopology('2A1F');
    expect(topologySchema.parse('2a1f')).toEqual(t);
    expect(topologySchema.parse({ attention: { dp: 2 }, ffn: { ranks: 1 } })).toEqual(t);
    expect(topologySchema.parse(JSON.parse(JSON.stringify(t)))).toEqual(t);
    const bad = topologySchema.safeParse('1A3F');
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toContain('attention-ge-ffn');
    expect(topologySchema.safeParse({ ...t, name: '5A1F' }).error?.issues[0]?.message).toContain('does not match its ranks (2A1F)');
  });
});

describe('prefill ranks (wPxAyF)', () => {
  it('parses a leading wP, names it canonically and keeps it out of the AFD world size', () => {
    const t = resolveTopology(' 2p1a1f ');
    expect(t).toEqual({ name: '2P1A1F', prefill: { ranks: 2, dp: 2, tp: 1 }, attention: { ranks: 1, dp: 1, tp: 1 }, ffn: { ranks: 1, dp: 1, tp: 1 }, worldSize: 2 });
    expect(prefillRanksOf(t)).toBe(2);
    expect(prefillRanksOf(resolveTopology('2A2F'))).toBe(0);
    expect(resolveTopology('1P2A2F').name).toBe('1P2A2F');
  });

  it('takes the structured form and round-trips through toSpec and the resolved form', () => {
    const t = resolveTopology({ prefill: { dp: 3 }, attention: { dp: 1 }, ffn: { dp: 1 } });
    expect(t.name).toBe('3P1A1F');
    expect(resolveTopology(toSpec(t))).toEqual(t);
    expect(topologySchema.parse(JSON.parse(JSON.stringify(t)))).toEqual(t);
  });

  it('refuses 0P, tp > 1 for prefill and a resolved name without its prefill ranks', () => {
    expect(validateTopology('0P1A1F')).toEqual({ ok: false, problems: [expect.stringMatching(/prefill\.ranks is 0 \(positive-sizes/)] });
    expect(validateTopology({ prefill: { dp: 1, tp: 2 }, attention: { dp: 1 }, ffn: { dp: 1 } })).toEqual({ ok: false, problems: [expect.stringMatching(/prefill-tp-1/)] });
    const r = validateTopology({ name: '1A1F', prefill: { ranks: 1, dp: 1, tp: 1 }, attention: { ranks: 1, dp: 1, tp: 1 }, ffn: { ranks: 1, dp: 1, tp: 1 }, worldSize: 2 });
    expect(r).toEqual({ ok: false, problems: [expect.stringMatching(/name "1A1F" does not match its ranks \(1P1A1F\)/)] });
    expect(validateTopology('2P')).toEqual({ ok: false, problems: [expect.stringMatching(/topology-syntax/)] });
  });
});
