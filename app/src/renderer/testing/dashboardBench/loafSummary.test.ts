import { describe, expect, it } from 'vitest';
import { summarizeLoafs, type LoafEntry } from './loafSummary.js';

const entry = (e: LoafEntry): PerformanceEntry => e as unknown as PerformanceEntry;

describe('summarizeLoafs', () => {
  it('counts long frames and ranks the scripts that ran in them', () => {
    const s = summarizeLoafs([
      entry({
        startTime: 100,
        duration: 80,
        blockingDuration: 20,
        styleAndLayoutStart: 170,
        scripts: [
          { duration: 40, invoker: 'TimerHandler:setInterval', invokerType: 'user-callback', sourceFunctionName: 'flush', sourceURL: 'http://h/assets/index.js', forcedStyleAndLayoutDuration: 3 },
          { duration: 5, invoker: 'Worker.onmessage', invokerType: 'event-listener', sourceFunctionName: '' },
        ],
      }),
      entry({ startTime: 300, duration: 60, scripts: [{ duration: 30, invoker: 'TimerHandler:setInterval', invokerType: 'user-callback', sourceFunctionName: 'flush', sourceURL: 'http://h/assets/index.js' }] }),
    ]);
    expect(s.count).toBe(2);
    expect(s.maxDurationMs).toBe(80);
    expect(s.maxBlockingMs).toBe(20);
    expect(s.maxStyleAndLayoutMs).toBe(10);
    expect(s.topScripts[0]).toEqual({ script: 'user-callback TimerHandler:setInterval -> flush @index.js', totalMs: 70, count: 2, forcedLayoutMs: 3 });
    expect(s.topScripts[1]!.script).toBe('event-listener Worker.onmessage -> (anonymous)');
  });

  it('is empty without entries', () => {
    expect(summarizeLoafs([])).toEqual({ count: 0, maxDurationMs: 0, maxBlockingMs: 0, maxStyleAndLayoutMs: 0, topScripts: [] });
  });
});
