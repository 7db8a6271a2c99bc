/** Parsing JSON the user types, with an error that says where the text stops being JSON. */

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** Line and column (1-based) of character `pos` of `text`. */
function lineColumn(text: string, pos: number): string {
  const before = text.slice(0, pos).split('\n');
  return `line ${before.length}, column ${before.at(-1)!.length + 1}`;
}

/** `text` parsed as JSON, or why it is not JSON (with the line and column where the engine says so). */
export function parseJsonText(text: string): Parsed<unknown> {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (e) {
    const msg = (e as Error).message;
    const at = /at position (\d+)/.exec(msg);
    const where = at && !/line \d+/.test(msg) ? ` (${lineColumn(text, Number(at[1]))})` : '';
    return { ok: false, error: `not valid JSON: ${msg}${where}` };
  }
}

/** What a JSON value is, for messages ("an array", "a string"). */
export function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}
