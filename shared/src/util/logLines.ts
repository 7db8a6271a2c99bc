/**
 * A rank's raw output lines as people read them: `prettyLogLine` makes pino JSON
 * "LEVEL message: error" and a role event "event type phase message"; `failureTail`
 * keeps, of the last lines under a failure, those that add to its message (role events are
 * already states, and the log record of the failure only repeats it, stack and all).
 */
const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

export function prettyLogLine(line: string): string {
  const t = line.trim();
  if (!t.startsWith('{')) return line;
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(t) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof o['msg'] === 'string') {
    const level = typeof o['level'] === 'number' ? (LEVELS[o['level']] ?? String(o['level'])) : String(o['level'] ?? '');
    const err = o['err'] as { message?: unknown } | undefined;
    const why = err && typeof err.message === 'string' && !o['msg'].includes(err.message) ? `: ${err.message}` : '';
    return `${level} ${o['msg']}${why}`.trim();
  }
  if (typeof o['type'] === 'string') {
    const parts = [`event ${o['type']}`];
    if (typeof o['phase'] === 'string') parts.push(o['phase']);
    if (typeof o['message'] === 'string') parts.push(o['message']);
    if (typeof o['apiUrl'] === 'string') parts.push(o['apiUrl']);
    return parts.join(' ');
  }
  return line;
}

/** A JSON object line, or null. */
function jsonLine(line: string): Record<string, unknown> | null {
  const t = line.trim();
  if (!t.startsWith('{')) return null;
  try {
    const o: unknown = JSON.parse(t);
    return typeof o === 'object' && o !== null && !Array.isArray(o) ? (o as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The lines of `lines` (oldest first) that say something `message` does not, each once in a row. */
export function failureTail(message: string, lines: readonly string[]): string[] {
  const out: string[] = [];
  for (const line of lines) {
    const o = jsonLine(line);
    if (o && typeof o['type'] === 'string' && typeof o['msg'] !== 'string') continue; // a role event
    if (o && typeof o['msg'] === 'string') {
      const err = (o['err'] as { message?: unknown } | undefined)?.message;
      if (typeof err === 'string' && err !== '' && message.includes(err)) continue;
      if (o['msg'] !== '' && message.includes(o['msg'])) continue;
    } else {
      // The CLI's own last words ("afd-agent: <why>") repeat the failure too.
      const bare = line.trim().replace(/^afd-agent: /, '');
      if (bare !== '' && message.includes(bare)) continue;
    }
    if (out.at(-1) !== line) out.push(line);
  }
  return out;
}
