import { describe, expect, it } from 'vitest';
import { toLogLine } from './logLine.js';

describe('toLogLine', () => {
  it('reads level and msg of pino records on stderr', () => {
    const text = JSON.stringify({ level: 50, time: 1, pid: 3, msg: 'boom', err: { message: 'disk full' } });
    expect(toLogLine({ seq: 1, timeMs: 5, stream: 'stderr', text })).toEqual({ timestampMs: 5, stream: 'stderr', level: 'error', text: 'boom: disk full' });
  });

  it('keeps other lines raw', () => {
    expect(toLogLine({ seq: 1, timeMs: 5, stream: 'stdout', text: '{"type":"ready"}' })).toEqual({ timestampMs: 5, stream: 'stdout', level: null, text: '{"type":"ready"}' });
    expect(toLogLine({ seq: 2, timeMs: 6, stream: 'stderr', text: '{not json' }).level).toBeNull();
  });
});
