/**
 * How much text a context window can hold, known from the tokenizer alone, so an
 * obviously over-long prompt is refused before anyone spends seconds tokenising it.
 *
 * Every token covers at most `maxTokenChars` characters (code points) of the normalised
 * text: the longest vocabulary entry (for byte-level BPE, whose entries spell bytes, the
 * longest entry in bytes, and a code point is at least one byte). Normalisation can only
 * shrink text by composing characters: NFC / NFKC turn at most 3 code points into one of
 * 2 UTF-8 bytes (u + two combining marks -> ǖ), a factor of 1.5. So a prompt of P code
 * points has at least P / (1.5 * maxTokenChars) tokens. Tokenizers whose normaliser or
 * pre-tokenizer may delete text (strip, replace, whitespace splitting ...) get no bound.
 */

interface JsonNode {
  type?: unknown;
  normalizers?: unknown;
  pretokenizers?: unknown;
  behavior?: unknown;
}

/** Normalisers that never shrink text (in code points), and the composing ones (by 1.5). */
const keepsLength = new Set(['NFD', 'NFKD', 'Lowercase', 'Prepend']);
const composes = new Set(['NFC', 'NFKC']);
/** Pre-tokenizers that keep every character (the others drop whitespace or delimiters). */
const keepsText = new Set(['ByteLevel', 'Metaspace', 'Digits', 'UnicodeScripts']);

/** Factor by which the normaliser may shrink text; null when it may delete text. */
function normalizerShrink(node: unknown): number | null {
  if (node === null || node === undefined) return 1;
  const n = node as JsonNode;
  if (n.type === 'Sequence' && Array.isArray(n.normalizers)) {
    let f = 1;
    for (const part of n.normalizers) {
      const g = normalizerShrink(part);
      if (g === null) return null;
      f *= g;
    }
    return f;
  }
  if (typeof n.type !== 'string') return null;
  if (keepsLength.has(n.type)) return 1;
  if (composes.has(n.type)) return 1.5;
  return null;
}

/** True when the pre-tokenizer keeps every character of its input. */
function preTokenizerKeepsText(node: unknown): boolean {
  if (node === null || node === undefined) return true;
  const n = node as JsonNode;
  if (n.type === 'Sequence' && Array.isArray(n.pretokenizers)) return n.pretokenizers.every(preTokenizerKeepsText);
  if (n.type === 'Split' || n.type === 'Punctuation') return n.behavior !== 'Removed';
  return typeof n.type === 'string' && keepsText.has(n.type);
}

function hasType(node: unknown, type: string): boolean {
  if (node === null || typeof node !== 'object') return false;
  const n = node as JsonNode;
  if (n.type === type) return true;
  const parts = Array.isArray(n.pretokenizers) ? n.pretokenizers : Array.isArray(n.normalizers) ? n.normalizers : [];
  return parts.some((p) => hasType(p, type));
}

const codePoints = (s: string): number => countCodePoints(s);

/**
 * Most characters (code points) of input one token can stand for, or null when the
 * tokenizer gives no such bound. `tokenizerJson` is a parsed tokenizer.json.
 */
export function maxCharsPerToken(tokenizerJson: object): number | null {
  const t = tokenizerJson as { model?: { vocab?: unknown }; normalizer?: unknown; pre_tokenizer?: unknown; decoder?: unknown; added_tokens?: unknown };
  const shrink = normalizerShrink(t.normalizer);
  if (shrink === null || !preTokenizerKeepsText(t.pre_tokenizer)) return null;
  const vocab = t.model?.vocab;
  const entries: string[] = Array.isArray(vocab)
    ? vocab.map((e: unknown) => (Array.isArray(e) ? String(e[0]) : ''))
    : vocab && typeof vocab === 'object'
      ? Object.keys(vocab)
      : [];
  if (entries.length === 0) return null;
  // Byte-level entries spell one byte per character; other entries spell their text.
  const byteLevel = hasType(t.pre_tokenizer, 'ByteLevel') || hasType(t.decoder, 'ByteLevel');
  const size = byteLevel ? (e: string): number => e.length : codePoints;
  let longest = 0;
  for (const e of entries) longest = Math.max(longest, size(e));
  if (Array.isArray(t.added_tokens)) {
    for (const a of t.added_tokens as { content?: unknown }[]) if (typeof a.content === 'string') longest = Math.max(longest, codePoints(a.content));
  }
  return Math.ceil(longest * shrink);
}

const HIGH_SURROGATE = /[\uD800-\uDBFF]/;

/**
 * Code points of a string (surrogate pairs count once). A string without a high surrogate
 * is answered by one test in V8's compiled matcher, and a string V8 stores one byte a
 * character holds none at all: 13.5 million characters of ASCII take 0.1 ms, not the 40 ms
 * of a JavaScript loop over them (on the event loop that streams the rank's tokens).
 */
export function countCodePoints(s: string): number {
  if (!HIGH_SURROGATE.test(s)) return s.length;
  let pairs = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return s.length - pairs;
}

/**
 * Code points of `texts` together, counting only as far as needed to tell whether they
 * exceed `limit` (a string of n UTF-16 units has between n/2 and n code points).
 */
export function codePointsBeyond(texts: readonly string[], limit: number): number | null {
  const units = texts.reduce((a, t) => a + t.length, 0);
  if (units <= limit) return null;
  if (units / 2 > limit) return Math.ceil(units / 2);
  const n = texts.reduce((a, t) => a + countCodePoints(t), 0);
  return n > limit ? n : null;
}
