/**
 * The events of a server-sent-events body (the text between blank lines), as they arrive;
 * what each event's lines mean is the reader's business. After the events, `rest` is what
 * followed the last complete event: '' when the stream ended cleanly.
 */
export class SseReader {
  rest = '';

  constructor(private readonly body: AsyncIterable<Uint8Array>) {}

  async *events(): AsyncGenerator<string> {
    const decoder = new TextDecoder();
    for await (const part of this.body) {
      this.rest += decoder.decode(part, { stream: true });
      let end: number;
      while ((end = this.rest.indexOf('\n\n')) >= 0) {
        const event = this.rest.slice(0, end);
        this.rest = this.rest.slice(end + 2);
        yield event;
      }
    }
  }
}
