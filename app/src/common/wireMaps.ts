/**
 * What the Dashboard's two wire-time maps may show per rank, and the line that says what
 * their numbers are. A connector that cannot time a direction by itself (TCP across
 * hosts: no shared clock) must not make the F→A map repeat the A→F numbers, and a device
 * plane's operation span must not pass for a one-way time (metrics.ts, WireBasis).
 * Pure functions; no React.
 */
import type { WireBasis } from '@afd/shared';

/** Which wire map: attention → FFN or FFN → attention. */
export type WireDirection = 'a2f' | 'f2a';

/** A cell's value and, when it is left empty on purpose, why. */
export interface WireCell {
  /** Microseconds; NaN draws as empty. */
  us: number;
  /** Why the cell is empty (hover and legend); undefined when it shows a number. */
  note?: string;
}

/** Why an F→A cell of a round-trip-only connector is empty. */
export const F2A_ROUND_TRIP_NOTE = 'not timeable alone: no clock shared across hosts (the A→F map shows the round trip / 2)';
/** Why a cell of a rank that has timed nothing yet is empty. */
export const NOT_TIMED_NOTE = 'no wire time from this rank (none sampled yet, or its connector does not time this side)';

/**
 * The cell of direction `dir` for a rank whose samples have basis `basis` (undefined: the
 * rank does not say; its number is shown as it came).
 */
export function wireCell(dir: WireDirection, basis: WireBasis | undefined, us: number): WireCell {
  if (basis === 'unavailable') return { us: Number.NaN, note: NOT_TIMED_NOTE };
  // Half the round trip is one number for both directions: shown once, on the A→F map.
  if (basis === 'round-trip/2' && dir === 'f2a') return { us: Number.NaN, note: F2A_ROUND_TRIP_NOTE };
  return { us };
}

const BASIS_TEXT: Record<WireDirection, Record<Exclude<WireBasis, 'unavailable'>, string>> = {
  a2f: {
    'one-way': 'one-way: the attention rank\'s send to its arrival on the FFN rank (one host: a clock both share)',
    'round-trip/2': 'round trip / 2: ranks on different hosts share no clock, so half the round trip less the FFN rank\'s hold stands for both directions',
    'op-span': 'op span: device time of the send on the stream, waiting for the peer included (NCCL / peer memory): an upper bound, not one-way',
  },
  f2a: {
    'one-way': 'one-way: the FFN rank\'s send to its arrival on the attention rank (one host: a clock both share)',
    'round-trip/2': F2A_ROUND_TRIP_NOTE,
    'op-span': 'op span: device time of the receive on the stream, the FFN compute it waits for included (NCCL / peer memory): an upper bound, not one-way',
  },
};

/** The legend line of a map: what its numbers are, one clause per basis its ranks report. */
export function wireLegend(dir: WireDirection, bases: readonly (WireBasis | undefined)[]): string {
  const seen = [...new Set(bases)].filter((b): b is Exclude<WireBasis, 'unavailable'> => b !== undefined && b !== 'unavailable');
  if (seen.length === 0) return bases.some((b) => b === 'unavailable') ? `${NOT_TIMED_NOTE}; steps are sampled every 8th` : 'basis not reported by these ranks';
  return seen.map((b) => BASIS_TEXT[dir][b]).join('; ');
}
