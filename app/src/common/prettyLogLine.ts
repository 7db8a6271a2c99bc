/**
 * Makes a rank's raw output line readable in failure reports: pino JSON becomes
 * "LEVEL message (error)", a role event becomes "event type phase message"; other text
 * stays as it is.
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
