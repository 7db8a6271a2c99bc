/**
 * Stop strings on streamed text: the output ends right before the first stop string, and
 * text that could be the start of a stop string is held back until it cannot be.
 */
export interface StopMatch {
  /** Text safe to emit now. */
  text: string;
  /** True when a stop string matched; generation must end and `text` is the last delta. */
  stopped: boolean;
}

export class StopStringMatcher {
  /** Text received but not yet emitted (a possible stop-string prefix). */
  private pending = '';
  private readonly holdBack: number;

  constructor(private readonly stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
    this.holdBack = Math.max(0, ...this.stops.map((s) => s.length - 1));
  }

  push(delta: string): StopMatch {
    if (this.stops.length === 0) return { text: delta, stopped: false };
    const buf = this.pending + delta;
    let cut = -1;
    for (const s of this.stops) {
      const at = buf.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.pending = '';
      return { text: buf.slice(0, cut), stopped: true };
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
    this.pending = buf.slice(buf.length - keep);
    return { text: buf.slice(0, buf.length - keep), stopped: false };
  }

  /** Generation ended for another reason: release what was held back. */
  flush(): string {
    const text = this.pending;
    this.pending = '';
    return text;
  }
}
