/** A roofline profile carries the memory fields of a measured one, and the search drops what does not fit from either alike. */
import { describe, expect, it } from 'vitest';
import { findCard } from './cards.js';
import { layerCosts } from './costs.js';
import { findLinkPreset } from './links.js';
import { memoryModel } from './memory.js';
import { modelPreset } from './modelShape.js';
import type { CostProfile } from './profile.js';
import { attentionParams, modelParams, rooflineMemory, rooflineMemoryModel, rooflineProfile } from './roofline.js';
import { describeRow, plan } from './search.js';

const qwen = modelPreset('qwen3-30b-a3b'); // 30.5B bf16: 61 GB of weights
const l40s = findCard('l40s'); // 48 GB
const query = { tpotMs: 1000, context: 4096, maxBatch: 64, stageCounts: [1] };

describe('roofline profiles bounded by memory', () => {
  it("the card's published memory, the weights by role and the KV bytes per token from the shapes", () => {
    const p = rooflineProfile(l40s, qwen, { at: '2026-12-07T00:00:00.000Z' });
    expect(p.deviceMemoryBytes).toBe(48e9);
    expect(p.model.moe).toEqual({ numExperts: 128, topK: 8 });
    const m = memoryModel(p)!;
    expect(m.notes).toEqual([]);
    expect(m.weightBytes).toBeCloseTo(modelParams(qwen) * 2, 0);
    expect(m.attentionWeightBytes).toBe((48 * attentionParams(qwen) + 2 * 151936 * 2048) * 2);
    expect(m.attentionWeightBytes + m.ffnWeightBytes).toBe(m.weightBytes);
    expect(m.kvBytesPerToken).toBe(48 * 2 * 4 * 128 * 2); // layers x K and V x KV heads x head dim x bf16
    // a rank of g GPUs is one device of g cards: g copies of the attention weights, one of the FFN
    const eight = rooflineMemory(qwen, 8);
    expect(eight.attentionWeightBytes).toBe(8 * m.attentionWeightBytes);
    expect(eight.ffnWeightBytes).toBe(m.ffnWeightBytes);
    expect(rooflineProfile(l40s, qwen, { gpus: 8 }).deviceMemoryBytes).toBe(8 * 48e9);
    // what published.ts bounds its shapes by is the memory model of that profile
    expect(rooflineMemoryModel(l40s, qwen, 8)).toEqual(memoryModel(rooflineProfile(l40s, qwen, { gpus: 8 })));
  });

  it('a 61 GB model on 48 GB cards: the 1-GPU colocated shape and an unsplit FFN rank are dropped for memory; a measured profile of the same figures plans the same', () => {
    const roofline = rooflineProfile(l40s, qwen, { at: '2026-12-07T00:00:00.000Z' });
    const measured: CostProfile = { ...roofline, source: 'measured', device: 'NVIDIA L40S', driver: '550.54', commit: 'abc123' };
    const link = findLinkPreset('pcie5');
    const one = plan(layerCosts(roofline, link), { ...query, gpus: 1, memory: memoryModel(roofline) });
    expect(one.rows).toEqual([]);
    expect(one.dropped).toEqual([{ kind: 'colocated', topology: '1 colocated replica', reason: 'colocated: 57 GiB of weights do not fit 45 GiB' }]);
    expect(one.reason).toMatch(/dropped for memory: colocated: 57 GiB of weights do not fit 45 GiB/);
    const two = plan(layerCosts(roofline, link), { ...query, gpus: 2, memory: memoryModel(roofline) });
    expect(two.dropped.map((d) => d.reason)).toEqual(['colocated: 57 GiB of weights do not fit 45 GiB', 'FFN rank: 54 GiB of weights do not fit 45 GiB']);
    expect(two.rows.map(describeRow)).toEqual(['EP2']);
    expect(memoryModel(measured)).toEqual(memoryModel(roofline));
    const fromMeasured = plan(layerCosts(measured, link), { ...query, gpus: 2, memory: memoryModel(measured) });
    expect(fromMeasured.dropped).toEqual(two.dropped);
    expect(fromMeasured.rows).toEqual(two.rows);
  });
});
