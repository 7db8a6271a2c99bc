/** The mixed cluster's pools: measured or roofline per kind, described; the price rule; the model check. */
import { describe, expect, it } from 'vitest';
import { findCard } from './cards.js';
import { cardPools, presetShape, unpricedCards } from './heteroPools.js';
import { findLinkPreset } from './links.js';
import { rooflineProfile } from './roofline.js';

const model = 'qwen3_moe/qwen3-30b-a3b';
const link = findLinkPreset('nvlink4');

describe('card pools of a mixed cluster', () => {
  it('prices a kind without a profile by its roofline, and one with a profile by it', () => {
    const measured = { ...rooflineProfile(findCard('h100'), presetShape(model), { at: '2026-12-07T00:00:00.000Z' }), source: 'measured' as const, device: 'NVIDIA H100 (lab)' };
    let asked = 0;
    const r = cardPools([{ card: 'h200', gpus: 2, price: 3 }, { card: 'mi300', gpus: 4, measured: { profile: measured, source: 'mi.json' } }], { model, shape: () => (asked++, presetShape(model)), link, context: 256 });
    expect(asked).toBe(1);
    expect(r.pools.map((p) => [p.card, p.gpus, p.pricePerGpu])).toEqual([['h200', 2, 3], ['mi300', 4, undefined]]);
    expect(r.cards[0]).toMatchObject({ label: 'NVIDIA H200 SXM 141GB', price: 3, costs: expect.stringMatching(/^roofline from published figures \(not measured\): published: NVIDIA H200/) });
    // A card outside the table is labelled by its profile's device.
    expect(r.cards[1]).toEqual({ card: 'mi300', label: 'NVIDIA H100 (lab)', gpus: 4, price: null, costs: 'measured: mi.json (NVIDIA H100 (lab), 2026-12-07T00:00:00.000Z)', memoryBytes: 80e9 });
    // Both kinds carry their memory: the roofline's from the card's published figure, the profile's measured one.
    expect(r.cards[0]!.memoryBytes).toBeGreaterThan(100e9);
    expect(r.pools.every((p) => p.memory !== undefined && p.memory !== null)).toBe(true);
  });

  it('asks for no model shape when every kind is measured; refuses a profile of another model, named as the caller names it', () => {
    const measured = { ...rooflineProfile(findCard('h100'), presetShape(model)), source: 'measured' as const };
    const shape = () => {
      throw new Error('not asked');
    };
    expect(cardPools([{ card: 'h100', gpus: 1, measured: { profile: measured, source: 'a.json' } }], { model, shape, link, context: 256 }).pools).toHaveLength(1);
    expect(() => cardPools([{ card: 'h100', gpus: 1, measured: { profile: measured, source: 'a.json' } }], { model: 'x/deepseek-v3', shape, link, context: 256, names: { profile: (c, f) => `--profile ${c}=${f}`, model: '--model' } })).toThrow(
      `--profile h100=a.json was measured on ${model}, not --model x/deepseek-v3`,
    );
  });

  it('prices: every kind or none', () => {
    expect(unpricedCards([{ card: 'a' }, { card: 'b' }])).toEqual([]);
    expect(unpricedCards([{ card: 'a', price: 1 }, { card: 'b', price: 2 }])).toEqual([]);
    expect(unpricedCards([{ card: 'a', price: 1 }, { card: 'b' }])).toEqual(['b']);
  });
});
