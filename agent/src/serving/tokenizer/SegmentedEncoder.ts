/**
 * Tokenises a prompt piece by piece, caching the long pieces: a chat resends its history
 * and agents their system prompt on every call, and tokenising a few thousand tokens of
 * text in JS costs milliseconds each time (prefix caching then skips their KV, so this was
 * most of a hit's time to first token).
 *
 * Exact by construction: the tokenizer itself first splits the text at its added tokens
 * (those matched before normalisation: <|im_start|>, <|im_end|> ...) with a leftmost-longest
 * dictionary match, and tokenises each piece between them on its own. This does the same
 * split and tokenises each piece through the tokenizer, caching pieces of at least
 * MIN_CACHED_CHARS characters (LRU, CACHE_CHARS characters in all). It is used only where
 * a piece's tokens cannot depend on its neighbours or its position: no added token strips
 * the whitespace around it (lstrip / rstrip), and no Metaspace pre-tokenizer (its "first"
 * prepend scheme treats the first piece apart). Elsewhere `of` answers null and callers
 * tokenise the whole text.
 */
const MIN_CACHED_CHARS = 256;
const CACHE_CHARS = 16 * 2 ** 20;

interface AddedTokenJson {
  id: number;
  content: string;
  lstrip?: boolean;
  rstrip?: boolean;
  normalized?: boolean;
}

type Trie = { [ch: string]: Trie } & { end?: string };

export class SegmentedEncoder {
  private readonly trie: Trie = Object.create(null) as Trie;
  private readonly idOf = new Map<string, number>();
  private readonly cache = new Map<string, readonly number[]>();
  private cachedChars = 0;
  /** Pieces found in the cache / tokenised, since start (tests, stats). */
  hits = 0;
  misses = 0;

  /** An encoder over `encodePiece` (the tokenizer, no special tokens added), or null when splitting could change the tokens. */
  static of(tokenizerJson: object, encodePiece: (text: string) => number[]): SegmentedEncoder | null {
    const json = tokenizerJson as { added_tokens?: AddedTokenJson[]; pre_tokenizer?: unknown; normalizer?: unknown };
    const added = json.added_tokens ?? [];
    if (added.some((t) => t.lstrip === true || t.rstrip === true)) return null;
    if (JSON.stringify(json.pre_tokenizer ?? null).includes('"Metaspace"')) return null;
    return new SegmentedEncoder(
      added.filter((t) => t.normalized !== true),
      encodePiece,
    );
  }

  private constructor(
    unnormalized: readonly AddedTokenJson[],
    private readonly encodePiece: (text: string) => number[],
  ) {
    for (const t of unnormalized) {
      if (t.content.length === 0) continue;
      this.idOf.set(t.content, t.id);
      let node = this.trie;
      for (let i = 0; i < t.content.length; i++) node = node[t.content[i]!] ??= Object.create(null) as Trie; // UTF-16 units, as the tokenizer's own trie
      node.end = t.content;
    }
  }

  /** The text's pieces: added tokens and the text between them (the tokenizer's own first split). */
  split(text: string): string[] {
    const out: string[] = [];
    let start = 0;
    for (let i = 0; i < text.length; ) {
      let node: Trie | undefined = this.trie;
      let match: string | undefined;
      for (let j = i; j < text.length && (node = node[text[j]!]); j++) if (node.end !== undefined) match = node.end;
      if (match === undefined) {
        i++;
        continue;
      }
      if (i > start) out.push(text.slice(start, i));
      out.push(match);
      i += match.length;
      start = i;
    }
    if (start < text.length) out.push(text.slice(start));
    return out;
  }

  /** Token ids of the text, as the tokenizer gives them without special tokens added. */
  encode(text: string): number[] {
    const ids: number[] = [];
    for (const piece of this.split(text)) {
      const added = this.idOf.get(piece);
      if (added !== undefined) ids.push(added);
      else for (const id of this.piece(piece)) ids.push(id);
    }
    return ids;
  }

  private piece(text: string): readonly number[] {
    if (text.length < MIN_CACHED_CHARS) return this.encodePiece(text);
    const hit = this.cache.get(text);
    if (hit) {
      this.cache.delete(text); // most recently used last
      this.cache.set(text, hit);
      this.hits++;
      return hit;
    }
    this.misses++;
    const ids = this.encodePiece(text);
    if (text.length <= CACHE_CHARS / 4) {
      this.cache.set(text, ids);
      this.cachedChars += text.length;
      for (const [k] of this.cache) {
        if (this.cachedChars <= CACHE_CHARS) break;
        this.cache.delete(k);
        this.cachedChars -= k.length;
      }
    }
    return ids;
  }
}
