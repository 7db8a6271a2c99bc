/**
 * Reads one call written as a JSON object, {"name": "f", "arguments": {...}} (hermes),
 * {"name": "f", "parameters": {...}} (llama3_json, tool_choice "required"), one character
 * at a time: the name once its string is complete, the arguments' raw text as it grows
 * (the keys may come in either order; other keys are ignored).
 */
import { JsonScanner } from './JsonScanner.js';

export type ReadState = 'more' | 'done' | 'error';

export class CallObjectReader {
  private readonly scanner = new JsonScanner();
  private nameRaw: string | null = null;
  private inName = false;
  private inArgs = false;
  private argsKey: string | null = null;
  /** The call's name, once its string is complete. */
  name: string | null = null;
  /** The raw JSON text of the arguments so far. */
  args = '';
  /** Why the text is not a call (after an 'error'). */
  problem = '';

  /** @param argKeys the keys that hold the arguments (the first one present wins; a second one is an error). */
  constructor(private readonly argKeys: readonly string[]) {}

  /** The arguments value was seen (complete or not). */
  get hasArgs(): boolean {
    return this.argsKey !== null;
  }

  push(c: string): ReadState {
    const events = this.scanner.push(c);
    const after: (() => void)[] = [];
    for (const e of events) {
      if (e.kind === 'error') return this.error(e.message);
      if (e.depth === 0) {
        if (e.kind === 'start' && c !== '{') return this.error('a call must be a JSON object');
        continue;
      }
      if (e.depth !== 1) continue;
      const isName = e.key === 'name';
      const isArgs = e.key !== null && this.argKeys.includes(e.key);
      if (e.kind === 'start') {
        if (isName) {
          this.inName = true;
          this.nameRaw = '';
        } else if (isArgs) {
          if (this.argsKey !== null) return this.error(`both "${this.argsKey}" and "${e.key}"`);
          this.argsKey = e.key;
          this.inArgs = true;
        }
      } else if (e.inclusive) after.push(() => this.valueEnded(isName, isArgs));
      else this.valueEnded(isName, isArgs);
    }
    if (this.inName) this.nameRaw += c;
    if (this.inArgs) this.args += c;
    for (const f of after) f();
    if (this.problem) return 'error';
    return this.scanner.done ? this.completed() : 'more';
  }

  private valueEnded(isName: boolean, isArgs: boolean): void {
    if (isName) {
      this.inName = false;
      const name = JSON.parse(this.nameRaw!) as unknown;
      if (typeof name !== 'string' || name === '') this.error('"name" must be a non-empty string');
      else this.name = name;
    }
    if (isArgs) this.inArgs = false;
  }

  private completed(): ReadState {
    return this.name === null ? this.error('no "name"') : 'done';
  }

  private error(problem: string): ReadState {
    this.problem = problem;
    return 'error';
  }
}
