/**
 * Static expert parallelism inside the FFN group: routed expert e of every MoE layer lives
 * on FFN rank floor(e * F / E). Each rank holds one contiguous range of experts and the
 * range sizes differ by at most one (E = 8, F = 3: [0, 3), [3, 6), [6, 8)). Dense layers,
 * shared experts and the router stay replicated on every FFN rank. The same rule is in
 * native/src/model/expert-placement.h; both must change together.
 */

/** The routed experts [start, end) one FFN rank holds (the same range in every MoE layer). */
export interface ExpertRange {
  /** First expert held. */
  start: number;
  /** One past the last expert held. */
  end: number;
}

function check(numExperts: number, numRanks: number): void {
  if (!Number.isSafeInteger(numExperts) || numExperts < 1) throw new RangeError(`expert placement needs a positive expert count (got ${numExperts})`);
  if (!Number.isSafeInteger(numRanks) || numRanks < 1) throw new RangeError(`expert placement needs a positive FFN rank count (got ${numRanks})`);
}

/** The FFN rank that holds expert e of E experts spread over F ranks. */
export function expertOwner(expert: number, numExperts: number, numRanks: number): number {
  check(numExperts, numRanks);
  if (!Number.isSafeInteger(expert) || expert < 0 || expert >= numExperts) throw new RangeError(`expert ${expert} does not exist (valid: 0..${numExperts - 1})`);
  return Math.floor((expert * numRanks) / numExperts);
}

/** The experts FFN rank f holds: [ceil(f * E / F), ceil((f + 1) * E / F)); empty when F > E leaves it none. */
export function expertRangeOf(rank: number, numExperts: number, numRanks: number): ExpertRange {
  check(numExperts, numRanks);
  if (!Number.isSafeInteger(rank) || rank < 0 || rank >= numRanks) throw new RangeError(`ffn rank ${rank} does not exist (valid: 0..${numRanks - 1})`);
  return { start: Math.ceil((rank * numExperts) / numRanks), end: Math.ceil(((rank + 1) * numExperts) / numRanks) };
}

/** Every FFN rank's range, by rank. */
export function expertRanges(numExperts: number, numRanks: number): ExpertRange[] {
  return Array.from({ length: numRanks }, (_, f) => expertRangeOf(f, numExperts, numRanks));
}

/** "experts 0-63" (inclusive, for people), "no experts" when empty. */
export function formatExpertRange(range: ExpertRange): string {
  if (range.end <= range.start) return 'no experts';
  return range.end - range.start === 1 ? `expert ${range.start}` : `experts ${range.start}-${range.end - 1}`;
}
