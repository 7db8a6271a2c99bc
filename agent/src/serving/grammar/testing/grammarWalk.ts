/**
 * Test helper: a random walk through a grammar's allowed tokens, as a model whose every
 * token the mask allows is equally likely would take, leaning towards tokens that close
 * strings and brackets so that the walk ends. It drives a real GrammarService (one
 * advance per token) and stops at a stop token, when the grammar allows one.
 */
import { allowedTokens, isAllowed } from '../maskBits.js';
import type { GrammarHandle, GrammarService } from '../GrammarService.js';

/** mulberry32: a small seeded generator in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

export interface WalkOptions {
  vocabSize: number;
  stopTokenIds: readonly number[];
  /** Token ids preferred half of the time when allowed (e.g. those containing a quote or a closing bracket). */
  closers: ReadonlySet<number>;
  seed: number;
  maxSteps?: number;
}

export interface Walk {
  /** Tokens taken, without the stop token. */
  ids: number[];
  /** True when it ended at a stop token (false: maxSteps ran out). */
  ended: boolean;
}

export async function walkGrammar(service: GrammarService, handle: GrammarHandle, o: WalkOptions): Promise<Walk> {
  const rand = seededRandom(o.seed);
  const matcher = service.newMatcher(handle);
  const stops = new Set(o.stopTokenIds);
  const ids: number[] = [];
  let fresh: number[] = [];
  try {
    for (let step = 0; step < (o.maxSteps ?? 2000); step++) {
      const r = await service.advance([{ matcher, newTokens: fresh }]);
      if (r.status[0] !== 'ok') throw new Error(`walk: row ${r.status[0]}: ${r.problems[0]}`);
      const row = (t: number): boolean => isAllowed(r.masks, 0, r.wordsPerRow, t);
      const canStop = o.stopTokenIds.some(row);
      const t = pick(r.masks, r.wordsPerRow, o, rand, stops);
      if (t === undefined && !canStop) throw new Error('walk: the mask allows no token');
      if (canStop && (t === undefined || rand() < 0.6)) return { ids, ended: true };
      ids.push(t!);
      fresh = [t!];
    }
    return { ids, ended: false };
  } finally {
    service.free(matcher);
  }
}

/** A random allowed token that is not a stop token (a closer half of the time when one is allowed); undefined when none. */
function pick(masks: Int32Array, words: number, o: WalkOptions, rand: () => number, stops: ReadonlySet<number>): number | undefined {
  const ok = (t: number): boolean => isAllowed(masks, 0, words, t) && !stops.has(t);
  if (rand() < 0.5) {
    const closing = [...o.closers].filter(ok);
    if (closing.length > 0) return closing[Math.floor(rand() * closing.length)];
  }
  // Dense masks: a few random draws find a token; sparse ones are listed.
  for (let i = 0; i < 64; i++) {
    const t = Math.floor(rand() * o.vocabSize);
    if (ok(t)) return t;
  }
  const all = allowedTokens(masks, 0, words, o.vocabSize).filter((t) => !stops.has(t));
  return all.length > 0 ? all[Math.floor(rand() * all.length)] : undefined;
}
