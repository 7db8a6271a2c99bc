/**
 * Turns a growing list of generated token ids into text deltas without ever emitting half
 * a character: byte-level BPE tokens can end in the middle of a UTF-8 sequence, which the
 * decoder shows as U+FFFD; such a delta is held back until the next token completes it.
 *
 * Decoding a short window (a few tokens of context + the new ones) instead of the whole
 * output keeps each step O(1), and the context tokens keep word-boundary spaces right for
 * Metaspace tokenizers (the vLLM prefix/read-offset scheme).
 */

/** Decodes token ids to text (skipping special tokens). */
export interface Decoder {
  decode(ids: readonly number[]): string;
}

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

  constructor(
    private readonly decoder: Decoder,
    promptIds: readonly number[] = [],
  ) {
    this.ids = promptIds.slice(-CONTEXT_TOKENS);
    this.prefixOffset = 0;
    this.readOffset = this.ids.length;
  }

  /** Adds generated tokens; returns the new text that is safe to emit (maybe ''). */
  push(...tokenIds: number[]): string {
    this.ids.push(...tokenIds);
    const prefixText = this.decoder.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const fullText = this.decoder.decode(this.ids.slice(this.prefixOffset));
    if (fullText.length <= prefixText.length || fullText.endsWith(REPLACEMENT)) return '';
    const delta = fullText.slice(prefixText.length);
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
    const prefixText = this.decoder.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const fullText = this.decoder.decode(this.ids.slice(this.prefixOffset));
    this.prefixOffset = this.readOffset = this.ids.length;
    const delta = fullText.length > prefixText.length ? fullText.slice(prefixText.length) : '';
    this.text += delta;
    return delta;
  }
}
