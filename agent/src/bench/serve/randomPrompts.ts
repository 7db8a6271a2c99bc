/**
 * Random prompts of about N tokens without needing the server's tokenizer: common English
 * words with a leading space are one token in the BPE vocabularies of the supported model
 * families, so N words ~ N tokens. The real count comes back in each response's usage.
 */

/** The word list of the random prompts (and, filtered to one-token words, of the multi-turn dataset). */
export const WORDS: readonly string[] = (
  'time year people way day man thing woman life child world school state family student group country problem hand part ' +
  'place case week company system program question work government number night point home water room mother area money ' +
  'story fact month lot right study book eye job word business issue side kind head house service friend father power hour ' +
  'game line end member law car city community name team minute idea kid body information back parent face others level ' +
  'office door health person art war history party result change morning reason research girl guy moment air teacher force ' +
  'education foot boy age policy music market sense nation plan college interest death experience effect use class control ' +
  'care field development role effort rate heart drug show leader light voice wife police mind price report decision son view'
).split(' ');

/** A deterministic PRNG (mulberry32) so a seed reproduces the same prompts. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface RandomRequest {
  prompt: string;
  /** Words in the prompt (the intended input length). */
  inputLen: number;
  outputLen: number;
}

/**
 * `count` prompts of inputLen words and outputLen max tokens; rangeRatio r draws each length
 * uniformly from [len * (1 - r), len * (1 + r)] like vLLM's --random-range-ratio.
 */
export function randomRequests(count: number, inputLen: number, outputLen: number, seed: number, rangeRatio = 0): RandomRequest[] {
  const next = rng(seed);
  const draw = (len: number): number => Math.max(1, Math.round(len * (1 - rangeRatio) + next() * len * 2 * rangeRatio));
  return Array.from({ length: count }, () => {
    const n = draw(inputLen);
    const words: string[] = [];
    for (let i = 0; i < n; i++) words.push(WORDS[Math.floor(next() * WORDS.length)]!);
    return { prompt: ` ${words.join(' ')}`, inputLen: n, outputLen: draw(outputLen) };
  });
}
