/**
 * Token-count aggregation: how many rows an FFN rank receives per stage (the reference
 * model of the FFN loop's control-payload merge, for tests).
 *
 * Every attention peer sends at least one row per layer and stage, so peers step in
 * lockstep even when their batch is empty: an empty peer sends a one-row placeholder
 * (whose output it discards). An FFN rank's total for a stage is therefore
 * `sum over its block of max(1, count)`.
 */
import { attentionBlocks, type Topology } from '@afd/shared';

function checkCount(count: number, where: string): void {
  if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`${where} is ${count}; token counts are non-negative integers`);
}

/** Rows one peer contributes in one stage: its tokens, or one placeholder row when it has none. */
export function peerRows(count: number): number {
  checkCount(count, 'token count');
  return Math.max(1, count);
}

/**
 * Per-FFN-rank totals from the counts of every attention rank.
 * counts: [numStages][x] tokens of attention rank a in stage s. Returns [numStages][y].
 */
export function aggregateFfnTokenCounts(topology: Topology, counts: readonly (readonly number[])[]): number[][] {
  if (counts.length === 0) throw new RangeError('counts has no stages; pass [numStages][numAttentionRanks] token counts');
  const blocks = attentionBlocks(topology);
  return counts.map((row, s) => {
    if (row.length !== topology.attention.ranks) {
      throw new RangeError(`counts[${s}] has ${row.length} entries but ${topology.name} has ${topology.attention.ranks} attention ranks`);
    }
    row.forEach((c, a) => checkCount(c, `counts[${s}][${a}]`));
    return blocks.map((b) => {
      let total = 0;
      for (let a = b.start; a < b.start + b.size; a++) total += Math.max(1, row[a]!);
      return total;
    });
  });
}

/**
 * One FFN rank's per-stage totals from a control payload's counts ([numStages][numPeers]).
 * Returns [numStages].
 */
export function blockTokenTotals(counts: readonly (readonly number[])[]): number[] {
  return counts.map((row, s) => {
    if (row.length === 0) throw new RangeError(`counts[${s}] is empty; a block has at least one peer`);
    let total = 0;
    row.forEach((c, p) => {
      checkCount(c, `counts[${s}][${p}]`);
      total += Math.max(1, c);
    });
    return total;
  });
}

/** Row offsets of each peer in the concatenated stage input: [numPeers + 1] prefix sums of peerRows. */
export function peerRowOffsets(stageCounts: readonly number[]): number[] {
  const offsets = [0];
  for (const c of stageCounts) offsets.push(offsets[offsets.length - 1]! + peerRows(c));
  return offsets;
}
