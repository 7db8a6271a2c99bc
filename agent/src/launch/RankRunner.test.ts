/**
 * RankRunner against a scripted role process that speaks the role contract (JSON-line
 * events on stdout, /health and /afd/stats over HTTP). The real role process is covered
 * by the daemon's launch integration test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { emptyRankStats } from '@afd/shared';
import { RankRunner, parseStatsBody, type RankUpdate } from './RankRunner.js';
import { until as waitUntil } from '../testing/until.js';

const stats = JSON.stringify(emptyRankStats('colocated', 0, 2, 1));
const script = (mode: 'ok' | 'fail') => `
const http = require('node:http');
let ready = false;
const out = (e) => process.stdout.write(JSON.stringify(e) + '\\n');
out({ type: 'progress', phase: 'loading', bytesDone: 0, bytesTotal: 100 });
const server = http.createServer((req, res) => {
  if (req.url === '/health') { res.writeHead(ready ? 200 : 503); res.end(JSON.stringify(ready ? { status: 'ok' } : { status: 'loading', reason: 'loading' })); return; }
  if (req.url === '/afd/stats') { res.writeHead(200); res.end(${JSON.stringify(stats)}); return; }
  res.writeHead(404); res.end();
});
server.listen(0, '127.0.0.1', () => {
  out({ type: 'listening', apiUrl: 'http://127.0.0.1:' + server.address().port });
  console.log('plain text line');
  console.error(JSON.stringify({ level: 30, msg: 'hello from pino' }));
  setTimeout(() => {
    out({ type: 'progress', phase: 'loading', bytesDone: 100, bytesTotal: 100 });
    if (${mode === 'fail' ? 'true' : 'false'}) { out({ type: 'failed', message: 'model dir has no config.json' }); process.exit(3); }
    ready = true;
    out({ type: 'ready' });
  }, 200);
});
process.on('SIGTERM', () => { out({ type: 'stopped' }); server.close(); process.exit(0); });
`;

const runners: RankRunner[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop(1000)));
});

function runner(mode: 'ok' | 'fail', updates: RankUpdate[]): RankRunner {
  const r = new RankRunner(
    { role: 'colocated', rank: 0 },
    { file: process.execPath, args: ['-e', script(mode)], env: { PATH: process.env['PATH'] } },
    (u) => updates.push(u),
    { readyPollMs: 50, metricsPollMs: 50 },
  );
  runners.push(r);
  return r;
}

const until = (cond: () => boolean, ms = 10_000): Promise<number> => waitUntil(cond, 'the condition', ms, { pollMs: 20 });

describe('RankRunner', () => {
  it('reports started, loading progress, ready from /health, metrics, then a clean stop', async () => {
    const updates: RankUpdate[] = [];
    const r = runner('ok', updates);
    r.start();
    await until(() => r.state === 'ready');
    await until(() => updates.some((u) => u.kind === 'metrics'));
    const kinds = updates.map((u) => u.kind).filter((k) => k !== 'log' && k !== 'metrics');
    expect(kinds).toEqual(['started', 'progress', 'listening', 'progress', 'ready']);
    expect(updates.filter((u) => u.kind === 'progress').map((u) => (u.kind === 'progress' ? u.bytesDone : -1))).toEqual([0, 100]);
    expect(r.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const m = updates.find((u) => u.kind === 'metrics');
    expect(m?.kind === 'metrics' && m.snapshot.stats.role).toBe('colocated');
    expect(r.logs.since().map((l) => l.text)).toContain('plain text line');
    await r.stop(2000);
    expect(r.state).toBe('exited');
    expect(updates.at(-1)).toEqual({ kind: 'exited', exitCode: 0, signal: null });
  });

  it('reports a failure with exit code, the role message and the last log lines', async () => {
    const updates: RankUpdate[] = [];
    const r = runner('fail', updates);
    r.start();
    await until(() => r.state === 'failed');
    const failed = updates.find((u) => u.kind === 'failed');
    expect(failed).toMatchObject({ kind: 'failed', exitCode: 3, signal: null, message: 'colocated rank 0 exited with code 3: model dir has no config.json' });
    expect(failed?.kind === 'failed' && failed.lastLines.join('\n')).toContain('plain text line');
    expect(r.exitCode).toBe(3);
  });

  it('reports a crash by signal as a failure', async () => {
    const updates: RankUpdate[] = [];
    const r = runner('ok', updates);
    r.start();
    await until(() => r.state === 'ready');
    r.kill('SIGKILL');
    await until(() => r.state === 'failed');
    expect(updates.find((u) => u.kind === 'failed')).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
  });
});

describe('parseStatsBody', () => {
  it('accepts a RankStats body and rejects anything else', () => {
    const s = emptyRankStats('ffn', 1, 1, 1);
    expect(parseStatsBody(s, 5)).toEqual({ timestampMs: 5, stats: s, serving: null });
    expect(parseStatsBody({ ...s, serving: { runningRequests: -1 } }, 6)).toEqual({ timestampMs: 6, stats: s, serving: null });
    expect(parseStatsBody({ stats: s, serving: null }, 6)).toBeUndefined(); // no role wraps its stats
    expect(parseStatsBody({ nope: 1 }, 7)).toBeUndefined();
    expect(parseStatsBody(null, 7)).toBeUndefined();
  });

  it('keeps the serving stats a role adds beside its RankStats', () => {
    const s = emptyRankStats('attention', 0, 1, 1);
    const serving = {
      runningRequests: 2,
      waitingRequests: 1,
      promptTokensTotal: 40,
      generationTokensTotal: 12,
      requestsFinishedTotal: 3,
      outputTokensPerSecond: 55.5,
      kvUsage: 0.25,
    };
    const snap = parseStatsBody({ ...s, serving }, 8);
    expect(snap?.serving).toEqual(serving);
    expect(snap?.stats.role).toBe('attention');
  });
});
