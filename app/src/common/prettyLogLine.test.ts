import { describe, expect, it } from 'vitest';
import { prettyLogLine } from './prettyLogLine.js';

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
