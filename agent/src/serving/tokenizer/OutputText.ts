/**
 * A request's generated text, token by token, by vLLM's rules: incremental detokenization
 * (skip_special_tokens, spaces_between_special_tokens), stop strings (excluded or, with
 * include_stop_str_in_output, included) looked for only after the first min_tokens tokens,
 * and the text of a token that ended generation by its id (EOS, stop_token_ids) left out
 * unless include_stop_str_in_output.
 */
import { IncrementalDetokenizer, type Decoder, type DetokenizeOptions } from './IncrementalDetokenizer.js';
import { StopStringMatcher, type StopMatch } from './StopStringMatcher.js';

export interface OutputTextOptions extends DetokenizeOptions {
  /** Strings that end generation. */
  stop: readonly string[];
  /** Keep the stop string, or the stop token's text, in the output. */
  includeStopStrInOutput: boolean;
  /** Stop strings are looked for only in the text of the tokens after the first minTokens. */
  minTokens: number;
}

/** How a token relates to the end of generation. */
export type TokenEnd =
  /** Generation goes on. */
  | null
  /** The token ended generation by its id (EOS or a stop token id). */
  | 'stop-token'
  /** Generation ended with this token for another reason (max tokens, context window). */
  | 'other';

export class OutputText {
  private readonly detok: IncrementalDetokenizer;
  private readonly stops: StopStringMatcher;
  private numTokens = 0;

  constructor(
    decoder: Decoder,
    promptIds: readonly number[],
    private readonly opts: OutputTextOptions,
  ) {
    this.detok = new IncrementalDetokenizer(decoder, promptIds, opts);
    this.stops = new StopStringMatcher(opts.stop, { includeInOutput: opts.includeStopStrInOutput });
  }

  /** One generated token: the text to emit now, and whether a stop string ended generation. */
  push(tokenId: number, end: TokenEnd): StopMatch {
    this.numTokens++;
    const check = this.numTokens > this.opts.minTokens;
    let text = '';
    if (end !== 'stop-token' || this.opts.includeStopStrInOutput) {
      const m = this.stops.push(this.detok.push(tokenId), check);
      if (m.stopped) return m;
      text = m.text;
    }
    if (end === null) return { text, stopped: false };
    const last = this.stops.push(this.detok.flush(), check);
    return { text: text + last.text + (last.stopped ? '' : this.stops.flush()), stopped: last.stopped };
  }
}
