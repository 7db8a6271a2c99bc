/**
 * Stop strings on streamed text: the output ends right before the first stop string (or
 * right after it, with includeInOutput: vLLM's include_stop_str_in_output). Excluded stop
 * strings need text that could start one held back until it cannot; included ones do not
 * (only a tail of what was emitted is kept, to find a stop string across deltas).
 *
 * A push with `check` false (vLLM: the text of the first min_tokens tokens) is never
 * searched; a later match must end in text pushed with `check` true, as in vLLM.
 */
export interface StopMatch {
  /** Text safe to emit now. */
  text: string;
  /** True when a stop string matched; generation must end and `text` is the last delta. */
  stopped: boolean;
}

export interface StopStringOptions {
  /** Keep the stop string in the output (vLLM include_stop_str_in_output; default false). */
  includeInOutput?: boolean;
}

export class StopStringMatcher {
  /**
   * Text kept for matching: not emitted yet (excluded stop strings) or the tail of what was
   * emitted (included ones).
   */
  private carry = '';
  private readonly holdBack: number;
  private readonly include: boolean;

  constructor(
    private readonly stops: readonly string[],
    options: StopStringOptions = {},
  ) {
    this.stops = stops.filter((s) => s.length > 0);
    this.holdBack = Math.max(0, ...this.stops.map((s) => s.length - 1));
    this.include = options.includeInOutput ?? false;
  }

  push(delta: string, check = true): StopMatch {
    if (this.stops.length === 0) return { text: delta, stopped: false };
    const buf = this.carry + delta;
    const oldLen = this.carry.length;
    const emitted = this.include ? oldLen : 0; // carry already sent (included stop strings)
    if (check) {
      let cut = -1;
      let end = 0;
      for (const s of this.stops) {
        const at = buf.indexOf(s, Math.max(0, oldLen - s.length + 1)); // must end in the new text
        if (at >= 0 && (cut < 0 || at < cut)) [cut, end] = [at, at + s.length];
      }
      if (cut >= 0) {
        this.carry = '';
        return { text: buf.slice(emitted, this.include ? end : cut), stopped: true };
      }
    }
    if (this.include) {
      this.carry = buf.slice(Math.max(0, buf.length - this.holdBack));
      return { text: delta, stopped: false };
    }
    // Hold back the longest tail that is a prefix of some stop string.
    let keep = 0;
    for (let n = Math.min(this.holdBack, buf.length); n > 0; n--) {
      const tail = buf.slice(buf.length - n);
      if (this.stops.some((s) => s.startsWith(tail))) {
        keep = n;
        break;
      }
    }
    this.carry = buf.slice(buf.length - keep);
    return { text: buf.slice(0, buf.length - keep), stopped: false };
  }

  /** Generation ended for another reason: release what was held back. */
  flush(): string {
    const text = this.include ? '' : this.carry;
    this.carry = '';
    return text;
  }
}
