/**
 * Prefill/decode disaggregation in peer memory through the serving engines (the fakes' peer
 * memory, checked by content like their KV bytes): what happens when a link cannot use it
 * (the map fails, the layouts differ, a copy fails) under transport auto (bytes instead) and
 * transport peer (the prompt is prefilled here, peer_unavailable).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KvPeerEngine } from '../engineLike.js';
import type { GenerateParams } from '../ServingEngine.js';
import { greedy, narrow, pdRanks, run, story, unopenablePeer, widen, withPeer, type Cleanups } from './testing/pdRanks.js';

const cleanups: Cleanups = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const params: GenerateParams = { promptIds: story, sampling: greedy, maxTokens: 5 };
const tokens = Math.floor((story.length - 1) / 4) * 4;

describe('peer memory, transport auto', () => {
  const { fakeRank, prefillRank, decodeRank } = pdRanks(cleanups, 'auto');

  it('a peer map that fails: the link goes on with bytes', async () => {
    const p = await prefillRank(0);
    const d = decodeRank([{ rank: 0, port: p.port }], {}, false, (kv) => unopenablePeer(kv, 'cudaIpcOpenMemHandle failed: invalid device context'));
    expect(await run(d.serving, params)).toEqual(await run(fakeRank().serving, params));
    expect(d.counts.transfers.map((t) => [t.transport, t.bytes])).toEqual([['tcp', tokens * 20]]);
    expect(d.links[0]!.peerProblem).toMatch(/cudaIpcOpenMemHandle failed/);
    expect(d.counts.local).toEqual([]);
  });

  it('layouts that differ (the byte path converts them): bytes, not peer memory', async () => {
    const p = await prefillRank(0, {}, undefined, { kvOf: widen });
    const d = decodeRank([{ rank: 0, port: p.port }], {}, false, narrow);
    expect(await run(d.serving, params)).toEqual(await run(fakeRank().serving, params));
    expect(d.counts.transfers.map((t) => t.transport)).toEqual(['tcp']);
    expect(d.links[0]!.peerProblem).toMatch(/the layouts differ \(dtype f32 there, bf16 here; rowBytes 80 there, 40 here\)/);
  });

  it('a copy that fails: that prompt is prefilled here, later ones go as bytes, the prefill rank frees its blocks', async () => {
    const p = await prefillRank(0);
    let pulls = 0;
    const d = decodeRank([{ rank: 0, port: p.port }], {}, false, (kv) => {
      const real = kv.peer!;
      const failing: KvPeerEngine = {
        ...real,
        open: async (desc) => {
          const link = await real.open(desc);
          return { ...link, pullKvBlocks: (s, t) => (++pulls === 1 ? Promise.reject(new Error('peer copy failed: device lost')) : link.pullKvBlocks(s, t)), close: () => link.close() };
        },
      };
      return withPeer(kv, failing);
    });
    const local = fakeRank();
    expect(await run(d.serving, params)).toEqual(await run(local.serving, params));
    expect(d.counts.local).toEqual(['prefill_failed']);
    expect(d.links[0]!.transport).toBe('tcp');
    const again: GenerateParams = { ...params, promptIds: story.slice(1) };
    expect(await run(d.serving, again)).toEqual(await run(local.serving, again));
    expect(d.counts.transfers.map((t) => t.transport)).toEqual(['tcp']);
    for (let t = 0; t < 100 && p.serving.scheduler.blocks.numUsedBlocks > 0; t++) await new Promise((r) => setTimeout(r, 10));
    expect(p.serving.scheduler.blocks.numUsedBlocks).toBe(0);
    expect(d.serving.scheduler.blocks.owners()).toEqual([]);
  });
});

describe('peer memory, transport peer', () => {
  const { fakeRank, prefillRank, decodeRank } = pdRanks(cleanups, 'peer');

  it('a link in peer memory serves as in auto', async () => {
    const p = await prefillRank(0, { numStateSlots: 8 });
    const d = decodeRank([{ rank: 0, port: p.port }], { numStateSlots: 8 });
    expect(await run(d.serving, params)).toEqual(await run(fakeRank({ numStateSlots: 8 }).serving, params));
    expect(d.counts.transfers.map((t) => [t.transport, t.bytes])).toEqual([['peer', tokens * 20 + 16]]);
    expect(p.serving.scheduler.stateSlots!.numTaken).toBe(0);
  });

  it('a link that cannot map the peer memory is not used: prefilled here, peer_unavailable', async () => {
    const p = await prefillRank(0);
    const d = decodeRank([{ rank: 0, port: p.port }], {}, false, (kv) => unopenablePeer(kv, 'not mappable'));
    expect(await run(d.serving, params)).toEqual(await run(fakeRank().serving, params));
    expect(d.counts.local).toEqual(['peer_unavailable']);
    expect(d.counts.transfers).toEqual([]);
    expect(p.server.stats().prefillsTotal).toBe(0);
  });

  it('layouts that differ: peer_unavailable, not bytes', async () => {
    const p = await prefillRank(0, {}, undefined, { kvOf: widen });
    const d = decodeRank([{ rank: 0, port: p.port }], {}, false, narrow);
    expect(await run(d.serving, params)).toEqual(await run(fakeRank().serving, params));
    expect(d.counts.local).toEqual(['peer_unavailable']);
  });
});
