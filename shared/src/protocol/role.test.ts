import { describe, expect, it } from 'vitest';
import { formatRoleEvent, parseRoleEventLine, roleEventSchema, type RoleEvent } from './role.js';

describe('role stdout events', () => {
  const events: RoleEvent[] = [
    { type: 'progress', phase: 'loading', bytesDone: 1024, bytesTotal: 4096 },
    { type: 'progress', phase: 'rendezvous', bytesDone: 1, bytesTotal: 2, message: 'waiting for ffn 1 at 127.0.0.1:29501' },
    { type: 'progress', phase: 'warmup', bytesDone: 0, bytesTotal: 0 },
    { type: 'listening', apiUrl: 'http://127.0.0.1:41234' },
    { type: 'ready' },
    { type: 'failed', message: 'ffn 0 unreachable at 127.0.0.1:29500: connection refused; start the FFN ranks first' },
    { type: 'stopped' },
  ];

  it('round-trips every event through one stdout line', () => {
    for (const e of events) {
      const line = formatRoleEvent(e);
      expect(line.endsWith('\n')).toBe(true);
      expect(line.indexOf('\n')).toBe(line.length - 1);
      const parsed = parseRoleEventLine(line.trim());
      expect(parsed).toEqual({ ok: true, event: e });
    }
  });

  it('rejects malformed lines with a reason', () => {
    const cases: [string, RegExp][] = [
      ['loading weights...', /not a JSON role event/],
      ['{"type":"progress","phase":"compiling","bytesDone":1,"bytesTotal":2}', /phase/],
      ['{"type":"progress","phase":"loading","bytesDone":-1,"bytesTotal":2}', /bytesDone/],
      ['{"type":"listening"}', /apiUrl/],
      ['{"type":"failed","message":3}', /message/],
      ['{"type":"exploded"}', /malformed role event/],
      ['[]', /malformed role event/],
    ];
    for (const [line, why] of cases) {
      const r = parseRoleEventLine(line);
      expect(r.ok, line).toBe(false);
      if (!r.ok) expect(r.error).toMatch(why);
    }
  });

  it('formatRoleEvent refuses an invalid event', () => {
    expect(() => formatRoleEvent({ type: 'listening', apiUrl: '' })).toThrow();
    expect(roleEventSchema.safeParse({ type: 'ready' }).success).toBe(true);
  });
});
