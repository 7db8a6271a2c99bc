import { describe, expect, it } from 'vitest';
import { failureTail, prettyLogLine } from './logLines.js';

describe('prettyLogLine', () => {
  it('reads pino records and role events', () => {
    expect(prettyLogLine('{"level":50,"msg":"role failed","err":{"message":"config.json missing"}}')).toBe('error role failed: config.json missing');
    expect(prettyLogLine('{"level":30,"msg":"ready"}')).toBe('info ready');
    expect(prettyLogLine('{"type":"progress","phase":"loading","bytesDone":0,"message":"starting"}')).toBe('event progress loading starting');
    expect(prettyLogLine('{"type":"listening","apiUrl":"http://h:1"}')).toBe('event listening http://h:1');
  });
  it('leaves other lines alone', () => {
    expect(prettyLogLine('Segmentation fault')).toBe('Segmentation fault');
    expect(prettyLogLine('{broken')).toBe('{broken');
  });
});

describe('failureTail', () => {
  it('drops role events and log records that repeat the failure, keeps the rest once', () => {
    const why = "cannot read /m/tokenizer.json: no such file";
    const lines = [
      '{"type":"progress","phase":"loading","bytesDone":0,"bytesTotal":0,"message":"starting"}',
      '{"type":"listening","apiUrl":"http://127.0.0.1:1"}',
      `{"type":"failed","message":"${why}"}`,
      '{"level":30,"msg":"http listening"}',
      `{"level":50,"msg":"role failed","err":{"message":"${why}","stack":"Error: ${why}\\n at x"}}`,
      'warning: low memory',
      'warning: low memory',
      `afd-agent: ${why}`,
    ];
    expect(failureTail(`attention rank 0 exited with code 1: ${why}`, lines)).toEqual(['{"level":30,"msg":"http listening"}', 'warning: low memory']);
  });
});
