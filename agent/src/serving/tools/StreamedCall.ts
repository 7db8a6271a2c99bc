/**
 * One tool call's JSON object, read a character at a time and streamed once its name is
 * read: until then its text is held back (`pending`: content if it turns out not to be a
 * call), then the call starts (`begin` gives it its index) and its arguments go out as
 * they grow, "{}" when the object had none. The parsers whose calls are JSON objects
 * (hermes, llama3_json) differ only in what surrounds them.
 */
import { CallObjectReader, type ReadState } from './CallObjectReader.js';
import type { DeltaBuilder } from './streamText.js';

export class StreamedCall {
  private readonly reader: CallObjectReader;
  private index = -1;
  private sentArgs = 0;

  /** `pending`: text that comes before the object and falls back with it (a tag, a separator). */
  constructor(
    argKeys: readonly string[],
    public pending: string,
    private readonly out: DeltaBuilder,
    private readonly begin: (name: string) => number,
  ) {
    this.reader = new CallObjectReader(argKeys);
  }

  /** The name is read: the call is streamed, and is a call whatever follows. */
  get committed(): boolean {
    return this.index >= 0;
  }

  push(c: string): ReadState {
    if (!this.committed) this.pending += c;
    const state = this.reader.push(c);
    if (!this.committed && this.reader.name !== null) {
      this.index = this.begin(this.reader.name);
      this.pending = '';
    }
    if (this.committed) {
      this.out.callArguments(this.index, this.reader.args.slice(this.sentArgs));
      this.sentArgs = this.reader.args.length;
    }
    if (state === 'done' && !this.reader.hasArgs) this.out.callArguments(this.index, '{}');
    return state;
  }
}
