import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { ProgressView } from './ProgressView.js';

function capture(): { stream: NodeJS.WriteStream; text: () => string } {
  const s = new PassThrough();
  let out = '';
  s.on('data', (c: Buffer) => (out += c.toString()));
  return { stream: s as unknown as NodeJS.WriteStream, text: () => out };
}

describe('ProgressView (no terminal)', () => {
  it('prints one line per phase change and readiness, not per progress update', () => {
    const { stream, text } = capture();
    const view = new ProgressView(stream, false);
    const ref = { launchId: 'l', role: 'ffn' as const, rank: 1 };
    view.onEvent('', { type: 'rank.started', ...ref, pid: 42 });
    view.onEvent('', { type: 'rank.progress', ...ref, phase: 'loading', bytesDone: 0, bytesTotal: 2 ** 30 });
    view.onEvent('', { type: 'rank.progress', ...ref, phase: 'loading', bytesDone: 2 ** 29, bytesTotal: 2 ** 30 });
    view.onEvent('', { type: 'rank.progress', ...ref, phase: 'rendezvous', bytesDone: 0, bytesTotal: 0, message: 'waiting for attention 0' });
    view.onEvent('gpu2', { type: 'rank.ready', ...ref, apiUrl: 'http://127.0.0.1:9' });
    view.stop();
    expect(text().trim().split('\n')).toEqual([
      'ffn 1: started (pid 42)',
      'ffn 1: loading 0.0 MiB / 1.00 GiB',
      'ffn 1: rendezvous: waiting for attention 0',
      'gpu2 ffn 1: ready http://127.0.0.1:9',
    ]);
  });

  it('a rank of a remote agent: its loopback URL says it is reachable on that host only, and through what', () => {
    const { stream, text } = capture();
    const view = new ProgressView(stream, false);
    const remote = { agent: '10.88.0.2:7700', address: '10.88.0.2' };
    view.onEvent('10.88.0.2:7700', { type: 'rank.ready', launchId: 'l', role: 'attention', rank: 1, apiUrl: 'http://127.0.0.1:35489' }, remote);
    view.onEvent('local', { type: 'rank.ready', launchId: 'l', role: 'attention', rank: 0, apiUrl: 'http://127.0.0.1:35400' }, null);
    view.stop();
    expect(text().trim().split('\n')).toEqual([
      "10.88.0.2:7700 attention 1: ready http://127.0.0.1:35489 (on 10.88.0.2 only: ranks listen on their host's loopback; requests reach it through the front router of agent 10.88.0.2:7700)",
      'local attention 0: ready http://127.0.0.1:35400',
    ]);
  });
});
