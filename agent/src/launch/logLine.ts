/**
 * Converts a raw ring line to the protocol's LogLine: stderr carries pino JSON records,
 * whose numeric level and `msg` become `level` and `text`; anything else stays raw.
 */
import type { LogLine } from '@afd/shared';
import type { RingLine } from './LogRing.js';

const pinoLevels: Record<number, NonNullable<LogLine['level']>> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

export function toLogLine(line: RingLine): LogLine {
  if (line.stream === 'stderr' && line.text.startsWith('{')) {
    try {
      const rec = JSON.parse(line.text) as { level?: unknown; msg?: unknown; err?: { message?: unknown } };
      const level = typeof rec.level === 'number' ? pinoLevels[rec.level] : undefined;
      if (level && typeof rec.msg === 'string') {
        const errText = rec.err && typeof rec.err.message === 'string' && rec.err.message !== rec.msg ? `: ${rec.err.message}` : '';
        return { timestampMs: line.timeMs, stream: 'stderr', level, text: rec.msg + errText };
      }
    } catch {
      // not JSON after all
    }
  }
  return { timestampMs: line.timeMs, stream: line.stream, level: null, text: line.text };
}
