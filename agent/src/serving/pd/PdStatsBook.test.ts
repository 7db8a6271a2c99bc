/** The attention rank's PD book: each link's transport, in RankStats.pd and as the afd:pd_link_transport_info gauge. */
import { emptyRankStats } from '@afd/shared';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerRankMetrics } from '../metrics/rankMetrics.js';
import { parseExposition } from '../testing/promExposition.js';
import { PdLinkBook } from './PdStatsBook.js';

describe('PdLinkBook', () => {
  it('reports each link\'s transport now, and the transfers as they came', async () => {
    const transports: Array<'peer' | 'tcp'> = ['peer', 'tcp'];
    const book = new PdLinkBook(2, () => true, (p) => transports[p]!);
    book.onTransfer({ prefillRank: 0, tokens: 64, bytes: 4096, transferMs: 3, prefillMs: 2, cachedTokens: 0, retries: 0, transport: 'peer' });
    expect(book.stats().links.map((l) => [l.prefillRank, l.transport, l.transfers])).toEqual([
      [0, 'peer', 1],
      [1, 'tcp', 0],
    ]);
    transports[0] = 'tcp'; // a copy failed: the link went on with bytes
    expect(book.stats().links[0]!.transport).toBe('tcp');

    const registry = new Registry();
    registerRankMetrics(registry, () => ({ ...emptyRankStats('attention', 0, 1, 2), pd: book.stats() }));
    const info = parseExposition(await registry.metrics()).get('afd:pd_link_transport_info');
    expect(info?.type).toBe('gauge');
    expect(info?.samples.map((s) => [s.labels, s.value])).toEqual([
      [{ prefill_rank: '0', transport: 'tcp' }, 1],
      [{ prefill_rank: '1', transport: 'tcp' }, 1],
    ]);
  });
});
