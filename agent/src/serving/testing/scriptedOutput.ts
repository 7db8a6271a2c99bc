/**
 * Test helper: a FakeEngine sampler that makes every sample generate given token ids, then
 * EOS. A sample is known by its seed (random per request unless the request sets one): the
 * first position it is asked about is where its output begins.
 */
import type { NextTokenContext } from './FakeEngine.js';

export interface ScriptedOutput {
  /** The FakeEngine's nextToken. */
  nextToken: (ctx: NextTokenContext) => number;
  /** The ids the next samples generate (samples already begun keep theirs). */
  set(ids: readonly number[]): void;
}

export function scriptedOutput(eosTokenId: number): ScriptedOutput {
  let script: readonly number[] = [];
  const samples = new Map<number, { start: number; ids: readonly number[] }>();
  return {
    set(ids) {
      script = ids;
    },
    nextToken({ seed, position }) {
      let s = samples.get(seed);
      if (!s) samples.set(seed, (s = { start: position, ids: script }));
      return s.ids[position - s.start] ?? eosTokenId;
    },
  };
}
