/**
 * Allowed-token bitmask rows in xgrammar's layout: row r of `masks` is words
 * [r * words, (r + 1) * words); token t is allowed when bit (t % 32) of word
 * floor(t / 32) is set.
 */

/** True when the row allows token t. */
export function isAllowed(masks: Int32Array, row: number, words: number, t: number): boolean {
  return ((masks[row * words + (t >>> 5)]! >>> (t & 31)) & 1) === 1;
}

/** Sets every word of a row (-1: every token allowed). */
export function fillRow(masks: Int32Array, row: number, words: number, value: number): void {
  masks.fill(value, row * words, (row + 1) * words);
}

/** Makes a row allow exactly `tokens`. */
export function setTokens(masks: Int32Array, row: number, words: number, tokens: readonly number[]): void {
  fillRow(masks, row, words, 0);
  for (const t of tokens) masks[row * words + (t >>> 5)]! |= 1 << (t & 31);
}

/** Tokens a row allows, in id order (below `vocabSize`). */
export function allowedTokens(masks: Int32Array, row: number, words: number, vocabSize: number): number[] {
  const out: number[] = [];
  const base = row * words;
  for (let w = 0; w < words; w++) {
    let bits = masks[base + w]!;
    while (bits !== 0) {
      const b = 31 - Math.clz32(bits & -bits);
      const t = w * 32 + b;
      if (t < vocabSize) out.push(t);
      bits &= bits - 1;
    }
  }
  return out;
}

/**
 * Clears `tokens` from a row unless nothing else would be left (min_tokens: the stop
 * tokens wait while the grammar can go on; where it can only end, they stay). Returns
 * true when it cleared them.
 */
export function banUnlessOnly(masks: Int32Array, row: number, words: number, tokens: readonly number[]): boolean {
  const base = row * words;
  const banned = new Map<number, number>(); // word -> bits of the tokens in it
  for (const t of tokens) banned.set(t >>> 5, (banned.get(t >>> 5) ?? 0) | (1 << (t & 31)));
  let other = false;
  for (let w = 0; w < words && !other; w++) other = (masks[base + w]! & ~(banned.get(w) ?? 0)) !== 0;
  if (!other) return false;
  for (const [w, bits] of banned) masks[base + w]! &= ~bits;
  return true;
}
