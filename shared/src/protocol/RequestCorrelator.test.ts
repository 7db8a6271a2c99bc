import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RequestCorrelator, type CorrelatorTimers } from './RequestCorrelator.js';

const timeout = (what: string) => () => new Error(`${what} got no answer`);

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('RequestCorrelator', () => {
  it('numbers requests "1", "2", ... by default, or takes ids from newId', () => {
    const counted = new RequestCorrelator<string>();
    expect([counted.start('a', 1000, timeout('a')).id, counted.start('b', 1000, timeout('b')).id]).toEqual(['1', '2']);
    const ids = ['x-1', 'x-2'];
    const custom = new RequestCorrelator<string>({ newId: () => ids.shift()! });
    expect([custom.start('a', 1000, timeout('a')).id, custom.start('b', 1000, timeout('b')).id]).toEqual(['x-1', 'x-2']);
    expect(custom.size).toBe(2);
  });

  it('refuses an id that is still pending', () => {
    const r = new RequestCorrelator<string>({ newId: () => 'same' });
    r.start('a', 1000, timeout('a'));
    expect(() => r.start('b', 1000, timeout('b'))).toThrow('request id same is already pending: newId must not repeat');
    expect(r.size).toBe(1);
  });

  it('settles each request with what read makes of its answer, given its context', async () => {
    const r = new RequestCorrelator<{ method: string }>();
    const a = r.start<string>({ method: 'ping' }, 1000, timeout('ping'));
    const b = r.start<string>({ method: 'launch' }, 1000, timeout('launch'));
    expect(r.settle(b.id, (c) => ({ ok: true, value: `${c.method} done` }))).toBe(true);
    expect(r.settle(a.id, (c) => ({ ok: true, value: `${c.method} done` }))).toBe(true);
    expect(await b.answer).toBe('launch done');
    expect(await a.answer).toBe('ping done');
    expect(r.size).toBe(0);
  });

  it('rejects with the error of a failed outcome, or the one read throws', async () => {
    const r = new RequestCorrelator<string>();
    const refused = r.start('launch', 1000, timeout('launch'));
    const unreadable = r.start('inventory.get', 1000, timeout('inventory.get'));
    r.settle(refused.id, () => ({ ok: false, error: new Error('bad-spec: no such topology') }));
    r.settle(unreadable.id, (method) => {
      throw new Error(`${method}: result does not match its schema`);
    });
    await expect(refused.answer).rejects.toThrow('bad-spec: no such topology');
    await expect(unreadable.answer).rejects.toThrow('inventory.get: result does not match its schema');
  });

  it('times a request out after timeoutMs; a later answer is unknown', async () => {
    const r = new RequestCorrelator<string>();
    const slow = r.start('launch', 5000, timeout('launch'));
    const quick = r.start('ping', 10_000, timeout('ping'));
    vi.advanceTimersByTime(4999);
    expect(r.size).toBe(2);
    vi.advanceTimersByTime(1);
    await expect(slow.answer).rejects.toThrow('launch got no answer');
    expect(r.size).toBe(1);
    expect(r.settle(slow.id, () => ({ ok: true, value: 'late' }))).toBe(false);
    expect(r.settle(quick.id, () => ({ ok: true, value: 'pong' }))).toBe(true);
    await expect(quick.answer).resolves.toBe('pong');
  });

  it('uses the timers it is given, and clears the timer of an answered request', async () => {
    /** Hand-driven timers: `due` holds what is scheduled, `fire` runs it. */
    const due = new Map<number, { run: () => void; ms: number }>();
    let handles = 0;
    const timers: CorrelatorTimers = {
      setTimeout: (run, ms) => {
        due.set(++handles, { run, ms });
        return handles;
      },
      clearTimeout: (handle) => void due.delete(handle as number),
    };
    const r = new RequestCorrelator<string>({ timers });
    const answered = r.start('ping', 1000, timeout('ping'));
    const lost = r.start('launch', 3000, timeout('launch'));
    expect([...due.values()].map((t) => t.ms)).toEqual([1000, 3000]);
    r.settle(answered.id, () => ({ ok: true, value: 'pong' }));
    expect(due.size).toBe(1);
    for (const t of [...due.values()]) t.run();
    await expect(answered.answer).resolves.toBe('pong');
    await expect(lost.answer).rejects.toThrow('launch got no answer');
    expect(r.size).toBe(0);
  });

  it('answers for unknown ids, twice for one id, and fail of an unknown id are ignored', async () => {
    const r = new RequestCorrelator<string>();
    expect(r.settle('nobody', () => ({ ok: true, value: 1 }))).toBe(false);
    expect(r.fail('nobody', new Error('x'))).toBe(false);
    const a = r.start('ping', 1000, timeout('ping'));
    expect(r.settle(a.id, () => ({ ok: true, value: 'first' }))).toBe(true);
    expect(r.settle(a.id, () => ({ ok: true, value: 'second' }))).toBe(false);
    await expect(a.answer).resolves.toBe('first');
  });

  it('fail ends one request (e.g. its frame could not be sent)', async () => {
    const r = new RequestCorrelator<string>();
    const a = r.start('ping', 1000, timeout('ping'));
    const b = r.start('ping', 1000, timeout('ping'));
    expect(r.fail(a.id, new Error('socket is not open'))).toBe(true);
    await expect(a.answer).rejects.toThrow('socket is not open');
    expect(r.size).toBe(1);
    r.settle(b.id, () => ({ ok: true, value: 'pong' }));
    await expect(b.answer).resolves.toBe('pong');
  });

  it('failAll rejects every pending request on close, and nothing times out after', async () => {
    const r = new RequestCorrelator<string>();
    const answers = ['launch', 'ping', 'logs.tail'].map((m) => r.start(m, 1000, timeout(m)).answer);
    r.failAll(new Error('connection to the agent closed'));
    expect(r.size).toBe(0);
    for (const a of answers) await expect(a).rejects.toThrow('connection to the agent closed');
    expect(vi.getTimerCount()).toBe(0);
    const next = r.start('ping', 1000, timeout('ping'));
    expect(next.id).toBe('4');
    r.settle(next.id, () => ({ ok: true, value: 'pong' }));
    await expect(next.answer).resolves.toBe('pong');
  });
});
