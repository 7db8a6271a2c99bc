/**
 * Tokenising a prompt that may be far longer than the context window without paying for
 * all of it: a 7.5 MB prompt takes 9-15 s to tokenise whole, but it is known to be too
 * long after the first few hundred kilobytes.
 *
 * A text much longer than `limit` tokens could need (TRIGGER_CHARS_PER_TOKEN characters a
 * token) is first counted chunk by chunk, and counting stops as soon as the chunks hold
 * more than `limit` tokens: the prompt is refused with that lower bound. Only a text that
 * turns out to fit is then tokenised whole, so accepted prompts get exactly the tokens the
 * tokenizer gives them.
 *
 * Chunks are cut where pre-tokenizers split anyway: before a space that follows a
 * non-space and precedes one (byte-level BPE regexes of GPT-2, Llama 3, Qwen, and
 * Metaspace, start a piece there), else after a newline, else anywhere between two code
 * points. A cut where the tokenizer would not split may change the count of the tokens
 * around it, so each cut is granted SLACK_PER_CUT tokens of doubt: the bound reported is
 * the count less that slack, and it must still exceed the limit.
 */

/** Characters per chunk (about 50 ms of tokenising on one core). */
export const CHUNK_CHARS = 32_768;
/** Tokens a cut may add to the count of its neighbourhood. */
export const SLACK_PER_CUT = 4;
/** Texts longer than `limit` times this many characters are counted chunk by chunk first. */
export const TRIGGER_CHARS_PER_TOKEN = 4;
/** How far past a chunk's nominal end a cut is looked for. */
const CUT_SEARCH_CHARS = 4_096;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;

/** Where the chunk that starts at `from` ends (at most the text's length). */
export function nextCut(text: string, from: number, size = CHUNK_CHARS): number {
  const target = from + size;
  if (target >= text.length) return text.length;
  const end = Math.min(text.length - 1, target + CUT_SEARCH_CHARS);
  for (let i = target; i < end; i++) {
    if (text.charCodeAt(i) === 0x20 && !isSpace(text.charCodeAt(i - 1)) && !isSpace(text.charCodeAt(i + 1))) return i;
  }
  for (let i = target; i < end; i++) {
    if (text.charCodeAt(i - 1) === 0x0a && !isSpace(text.charCodeAt(i))) return i;
  }
  return isHighSurrogate(text.charCodeAt(target - 1)) ? target + 1 : target;
}

export interface BoundedTokenizer {
  /** Ids of a whole text, special tokens per `addSpecialTokens`. */
  encode(text: string, addSpecialTokens: boolean): number[];
  /** Ids of a piece of text, no special tokens. */
  encodePiece(text: string): number[];
}

/** The outcome: the ids, or a lower bound of the count when it passed the limit. */
export type BoundedIds = { ids: number[] } | { atLeast: number };

export interface BoundedControl {
  /** Awaited between chunks (a worker yields there to hear of a cancellation). */
  pause?: () => Promise<void>;
  /** True once nobody wants the result: tokenising stops with null. */
  cancelled?: () => boolean;
}

/**
 * Ids of `text`, or `{atLeast}` as soon as it is known to hold at least `limit` tokens;
 * null when cancelled.
 */
export async function encodeBounded(tok: BoundedTokenizer, text: string, addSpecialTokens: boolean, limit: number, control: BoundedControl = {}): Promise<BoundedIds | null> {
  if (text.length > limit * TRIGGER_CHARS_PER_TOKEN) {
    let count = 0;
    let cuts = 0;
    for (let from = 0; from < text.length; ) {
      const to = nextCut(text, from);
      count += tok.encodePiece(text.slice(from, to)).length;
      from = to;
      if (from < text.length) cuts++;
      if (count - cuts * SLACK_PER_CUT >= limit) return { atLeast: count - cuts * SLACK_PER_CUT };
      await control.pause?.();
      if (control.cancelled?.()) return null;
    }
  }
  return { ids: tok.encode(text, addSpecialTokens) };
}
