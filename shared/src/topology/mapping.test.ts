import { describe, expect, it } from 'vitest';
import {
  attentionBlockOf,
  attentionBlocks,
  controlRouteOf,
  controlRoutes,
  controlTargetOf,
  ffnRankOf,
  peerIndexOf,
  peersOf,
  roleRankOf,
  worldOrder,
  worldRankOf,
} from './mapping.js';
import { resolveTopology } from './spec.js';

const validPairs: [number, number][] = [];
for (let x = 1; x <= 16; x++) for (let y = 1; y <= x; y++) validPairs.push([x, y]);

describe('rank mapping, every valid xAyF with x, y <= 16', () => {
  it.each(validPairs)('%iA%iF', (x, y) => {
    const t = resolveTopology(`${x}A${y}F`);

    // World order: F0..F(y-1), then A0..A(x-1); worldRankOf and roleRankOf are inverses.
    const world = worldOrder(t);
    expect(world.map((w) => `${w.role[0]}${w.rank}`)).toEqual([
      ...Array.from({ length: y }, (_, f) => `f${f}`),
      ...Array.from({ length: x }, (_, a) => `a${a}`),
    ]);
    world.forEach((w, i) => {
      expect(w.worldRank).toBe(i);
      expect(worldRankOf(t, w.role, w.rank)).toBe(i);
      expect(roleRankOf(t, i)).toEqual(w);
    });

    // Blocks: contiguous, cover A0..A(x-1) exactly once, sizes differ by <= 1, larger first.
    const blocks = attentionBlocks(t);
    expect(blocks).toHaveLength(y);
    let next = 0;
    for (const b of blocks) {
      expect(b.start).toBe(next);
      expect(b.size).toBeGreaterThanOrEqual(1);
      next += b.size;
    }
    expect(next).toBe(x);
    const sizes = blocks.map((b) => b.size);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    expect([...sizes].sort((a, b) => b - a)).toEqual(sizes);
    expect(sizes.filter((s) => s === Math.ceil(x / y)).length).toBe(x % y === 0 ? y : x % y);

    // Peers: each attention rank has its block's FFN rank; each FFN rank has its block.
    const seen = new Array<number>(x).fill(0);
    for (const b of blocks) {
      expect(attentionBlockOf(t, b.ffnRank)).toEqual(b);
      const peers = peersOf(t, 'ffn', b.ffnRank);
      expect(peers.map((p) => p.rank)).toEqual(Array.from({ length: b.size }, (_, i) => b.start + i));
      peers.forEach((p, i) => {
        expect(p.role).toBe('attention');
        expect(p.worldRank).toBe(y + p.rank);
        expect(ffnRankOf(t, p.rank)).toBe(b.ffnRank);
        expect(peerIndexOf(t, p.rank)).toBe(i);
        expect(peersOf(t, 'attention', p.rank)).toEqual([{ worldRank: b.ffnRank, role: 'ffn', rank: b.ffnRank }]);
        seen[p.rank]!++;
      });
    }
    expect(seen.every((n) => n === 1)).toBe(true);

    // Control plane: every attention rank publishes to its block's FFN rank (the hub).
    const routes = controlRoutes(t);
    expect(routes.map((r) => r.ffnRank)).toEqual(Array.from({ length: y }, (_, f) => f));
    routes.forEach((r, f) => {
      expect(r).toEqual(controlRouteOf(t, f));
      expect(r.peerAttentionRanks).toEqual(peersOf(t, 'ffn', f).map((p) => p.rank));
    });
    for (let a = 0; a < x; a++) {
      const hub = controlTargetOf(t, a);
      expect(routes[hub]!.peerAttentionRanks).toContain(a);
    }
  });
});

describe('rank mapping examples', () => {
  it('3A2F: F0 <- A0, A1 and F1 <- A2', () => {
    const t = resolveTopology('3A2F');
    expect(peersOf(t, 'ffn', 0).map((p) => p.rank)).toEqual([0, 1]);
    expect(peersOf(t, 'ffn', 1).map((p) => p.rank)).toEqual([2]);
    expect(controlRoutes(t).map((r) => [r.ffnRank, r.peerAttentionRanks])).toEqual([[0, [0, 1]], [1, [2]]]);
    expect(worldRankOf(t, 'attention', 2)).toBe(4);
  });

  it('5A3F: blocks [A0,A1], [A2,A3], [A4]; 7A3F: [3,2,2]', () => {
    expect(attentionBlocks(resolveTopology('5A3F')).map((b) => [b.start, b.size])).toEqual([[0, 2], [2, 2], [4, 1]]);
    expect(attentionBlocks(resolveTopology('7A3F')).map((b) => b.size)).toEqual([3, 2, 2]);
  });

  it('rejects ranks outside the topology with the valid range', () => {
    const t = resolveTopology('2A1F');
    expect(() => worldRankOf(t, 'attention', 2)).toThrow(/attention rank 2 does not exist in 2A1F \(valid: 0..1\)/);
    expect(() => ffnRankOf(t, -1)).toThrow(RangeError);
    expect(() => attentionBlockOf(t, 1)).toThrow(/ffn rank 1/);
    expect(() => roleRankOf(t, 3)).toThrow(/world rank 3/);
    expect(() => peersOf(t, 'ffn', 0.5)).toThrow(RangeError);
  });
});
