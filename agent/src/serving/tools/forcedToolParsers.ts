/**
 * The outputs of tool_choice "required" and a named function, which the grammar forces
 * (toolChoiceGrammar.ts), read back as calls, whole or streamed:
 *
 *   named     the output is the arguments of that one function: one call, its arguments
 *             the output's text as generated;
 *   required  the output is a JSON array of {"name": ..., "parameters": {...}}: one call
 *             per item, committed once its name is read, its arguments the raw text of
 *             "parameters".
 *
 * An output the grammar did not shape (cut before a first call was named) is content.
 */
import { CallObjectReader } from './CallObjectReader.js';
import { JsonScanner } from './JsonScanner.js';
import { DeltaBuilder } from './streamText.js';
import { newToolCallId, toolParserOf, type ToolParser, type ToolStreamDelta, type ToolStreamOptions, type ToolStreamParser } from './toolCalls.js';

/** tool_choice {"type": "function", "function": {"name": name}}: the whole output is that call's arguments. */
export function namedCallParser(name: string): ToolParser {
  return toolParserOf('named', (options: ToolStreamOptions = {}) => {
    const out = new DeltaBuilder();
    let started = false;
    const start = (): void => {
      if (!started) out.callStart(0, (options.newId ?? newToolCallId)(), name);
      started = true;
    };
    return {
      push(text: string): ToolStreamDelta {
        if (text !== '') {
          start();
          out.callArguments(0, text);
        }
        return out.take();
      },
      finish(): ToolStreamDelta {
        start();
        return out.take();
      },
    };
  });
}

class RequiredCallsStream implements ToolStreamParser {
  private readonly out = new DeltaBuilder();
  private readonly scanner = new JsonScanner();
  private readonly newId: () => string;
  private item: CallObjectReader | null = null;
  private numCalls = 0;
  private committed = false;
  private sentArgs = 0;
  /** The output while no call is committed (content if none ever is). */
  private pending = '';
  /** After a scan error once a call was committed: the rest is dropped. */
  private stopped = false;

  constructor(options: ToolStreamOptions = {}) {
    this.newId = options.newId ?? newToolCallId;
  }

  push(text: string): ToolStreamDelta {
    for (const c of text) this.feed(c);
    return this.out.take();
  }

  finish(): ToolStreamDelta {
    if (this.numCalls === 0) this.out.text(this.pending);
    this.pending = '';
    return this.out.take();
  }

  private feed(c: string): void {
    if (this.numCalls === 0) this.pending += c;
    if (this.stopped) return;
    for (const e of this.scanner.push(c)) {
      if (e.kind === 'error' || (e.kind === 'start' && e.depth === 0 && c !== '[') || (e.kind === 'start' && e.depth === 1 && c !== '{')) {
        this.stopped = true;
        return;
      }
      if (e.kind === 'start' && e.depth === 1) [this.item, this.committed, this.sentArgs] = [new CallObjectReader(['parameters']), false, 0];
    }
    if (this.item) this.itemChar(c);
  }

  private itemChar(c: string): void {
    const item = this.item!;
    const state = item.push(c);
    if (!this.committed && item.name !== null) {
      this.committed = true;
      this.pending = '';
      this.out.callStart(this.numCalls++, this.newId(), item.name);
    }
    if (this.committed) {
      this.out.callArguments(this.numCalls - 1, item.args.slice(this.sentArgs));
      this.sentArgs = item.args.length;
    }
    if (state === 'more') return;
    if (state === 'error') this.stopped = true;
    else if (!item.hasArgs) this.out.callArguments(this.numCalls - 1, '{}');
    this.item = null;
  }
}

/** tool_choice "required": the output is a JSON array of {"name", "parameters"} items, one call each. */
export const requiredCallsParser: ToolParser = toolParserOf('required', (options) => new RequiredCallsStream(options));
