/**
 * Stop strings as the sampling panel types them: one a line, with `\n`, `\t` and `\\` for
 * a newline, a tab and a backslash (a stop string is often a newline). Empty lines are
 * not stop strings.
 */

const UNESCAPE: Record<string, string> = { n: '\n', t: '\t', '\\': '\\' };
const ESCAPE: Record<string, string> = { '\n': '\\n', '\t': '\\t', '\\': '\\\\' };

/** The stop strings of the typed text. */
export function parseStopText(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(/\\([nt\\])/g, (_, c: string) => UNESCAPE[c]!))
    .filter((s) => s !== '');
}

/** The text that types `stop` (parseStopText's inverse). */
export function stopText(stop: readonly string[]): string {
  return stop.map((s) => s.replace(/[\n\t\\]/g, (c) => ESCAPE[c]!)).join('\n');
}
