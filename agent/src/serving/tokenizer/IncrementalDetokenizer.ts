/**
 * Turns a growing list of generated token ids into text deltas without ever emitting half
 * a character: byte-level BPE tokens can end in the middle of a UTF-8 sequence, which the
 * decoder shows as U+FFFD; such a delta is held back until the next token completes it.
 *
 * Decoding a short window (a few tokens of context + the new ones) instead of the whole
 * output keeps each step O(1), and the context tokens keep word-boundary spaces right for
 * Metaspace tokenizers (the vLLM prefix/read-offset scheme).
 */

/** Decodes token ids to text. */
export interface Decoder {
  /** Text of ids; special tokens skipped unless skipSpecialTokens is false (default true). */
  decode(ids: readonly number[], skipSpecialTokens?: boolean): string;
  /** The content of an added token (special or not); undefined for other tokens. */
  addedTokenContent?(id: number): string | undefined;
}

/** vLLM's detokenization options (SamplingParams.skip_special_tokens, spaces_between_special_tokens). */
export interface DetokenizeOptions {
  /** Leave special tokens (EOS, <|im_start|>, ...) out of the text (default true). */
  skipSpecialTokens: boolean;
  /**
   * When false, an added token that follows another added token is emitted as its raw
   * content, without the space some decoders (Metaspace, WordPiece) put before it; as
   * vLLM's fast detokenizer (default true: the tokenizer's own decoding).
   */
  spacesBetweenSpecialTokens: boolean;
}

export const defaultDetokenizeOptions: DetokenizeOptions = { skipSpecialTokens: true, spacesBetweenSpecialTokens: true };

/** Prompt tokens used as decoding context for the first output tokens. */
const CONTEXT_TOKENS = 5;
const REPLACEMENT = '\uFFFD';

export class IncrementalDetokenizer {
  private readonly ids: number[];
  /** Start of the decoding window. */
  private prefixOffset: number;
  /** Tokens before this index have been emitted as text. */
  private readOffset: number;
  /** Text emitted so far. */
  text = '';
  /** The last pushed token was an added token (for spacesBetweenSpecialTokens false). */
  private lastAdded = false;

  constructor(
    private readonly decoder: Decoder,
    promptIds: readonly number[] = [],
    private readonly options: DetokenizeOptions = defaultDetokenizeOptions,
  ) {
    this.ids = promptIds.slice(-CONTEXT_TOKENS);
    this.prefixOffset = 0;
    this.readOffset = this.ids.length;
  }

  /** Adds generated tokens; returns the new text that is safe to emit (maybe ''). */
  push(...tokenIds: number[]): string {
    this.ids.push(...tokenIds);
    const prefixText = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const fullText = this.decode(this.ids.slice(this.prefixOffset));
    const rawAdded = this.rawAddedToken(tokenIds);
    if (fullText.length <= prefixText.length || fullText.endsWith(REPLACEMENT)) return '';
    const delta = rawAdded ?? fullText.slice(prefixText.length);
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    this.text += delta;
    return delta;
  }

  /**
   * At the end of generation: whatever is still held back. Bytes that never formed a
   * character come out as U+FFFD (valid text), like every HF decoder does.
   */
  flush(): string {
    if (this.readOffset === this.ids.length) return '';
    const prefixText = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const fullText = this.decode(this.ids.slice(this.prefixOffset));
    this.prefixOffset = this.readOffset = this.ids.length;
    const delta = fullText.length > prefixText.length ? fullText.slice(prefixText.length) : '';
    this.text += delta;
    return delta;
  }

  private decode(ids: readonly number[]): string {
    return this.decoder.decode(ids, this.options.skipSpecialTokens);
  }

  /**
   * With spacesBetweenSpecialTokens false: the raw content of a lone pushed added token
   * that follows another added token (the text to emit in place of the decoder's), else
   * undefined. Tracks whether the last token was an added one.
   */
  private rawAddedToken(tokenIds: readonly number[]): string | undefined {
    if (this.options.spacesBetweenSpecialTokens || !this.decoder.addedTokenContent) return undefined;
    let raw: string | undefined;
    for (const id of tokenIds) {
      const content = this.decoder.addedTokenContent(id);
      raw = content !== undefined && this.lastAdded && tokenIds.length === 1 ? content : undefined;
      this.lastAdded = content !== undefined;
    }
    return raw;
  }
}
