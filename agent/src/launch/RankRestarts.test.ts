import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { restartPolicySchema } from '@afd/shared';
import { RankRestarts } from './RankRestarts.js';

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('RankRestarts', () => {
  it('on-failure: restarts after 1 s, 2 s, 4 s ... capped, and gives up past maxRestarts in a row', () => {
    const r = new RankRestarts<string>(restartPolicySchema.parse({ policy: 'on-failure', maxRestarts: 4, backoffMs: 1000, maxBackoffMs: 5000 }));
    const restarted: number[] = [];
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const d = r.onFailed('ffn0', () => restarted.push(i));
      expect(d).not.toBeNull();
      delays.push(d!.delayMs);
      expect(r.pending('ffn0')).toBe(true);
      vi.advanceTimersByTime(d!.delayMs - 1);
      expect(restarted).toHaveLength(i);
      vi.advanceTimersByTime(1);
      expect(restarted).toHaveLength(i + 1);
    }
    expect(delays).toEqual([1000, 2000, 4000, 5000]);
    expect(r.onFailed('ffn0', () => restarted.push(99))).toBeNull();
    expect(r.total('ffn0')).toBe(4);
    expect(r.total('attention0')).toBe(0);
  });

  it('a rank ready for stableMs starts its streak again; ready then failing sooner does not', () => {
    const r = new RankRestarts<string>(restartPolicySchema.parse({ policy: 'on-failure', maxRestarts: 1 }), 10_000);
    r.onFailed('a', () => undefined);
    vi.advanceTimersByTime(1000);
    r.onReady('a');
    vi.advanceTimersByTime(5000);
    expect(r.onFailed('a', () => undefined)).toBeNull(); // ready 5 s only: still the same streak
    const r2 = new RankRestarts<string>(restartPolicySchema.parse({ policy: 'on-failure', maxRestarts: 1 }), 10_000);
    r2.onFailed('a', () => undefined);
    vi.advanceTimersByTime(1000);
    r2.onReady('a');
    vi.advanceTimersByTime(10_000);
    expect(r2.streak('a')).toBe(0);
    expect(r2.onFailed('a', () => undefined)).toEqual({ attempt: 1, delayMs: 1000 });
    expect(r2.total('a')).toBe(2);
  });

  it('never: no restart; cancelAll drops scheduled ones', () => {
    const never = new RankRestarts<string>(restartPolicySchema.parse({ policy: 'never' }));
    expect(never.onFailed('a', () => undefined)).toBeNull();
    const r = new RankRestarts<string>(restartPolicySchema.parse({ policy: 'on-failure' }));
    let restarted = false;
    r.onFailed('a', () => (restarted = true));
    r.cancelAll();
    vi.advanceTimersByTime(60_000);
    expect(restarted).toBe(false);
    expect(r.pending('a')).toBe(false);
  });

  it('setPolicy: never cancels the restarts in back-off and refuses the next; on-failure again restarts', () => {
    const r = new RankRestarts<string>(restartPolicySchema.parse({ policy: 'on-failure', maxRestarts: 3 }));
    const restarted: string[] = [];
    r.onFailed('ffn0', () => restarted.push('ffn0'));
    r.onFailed('ffn1', () => restarted.push('ffn1'));
    vi.advanceTimersByTime(1000); // both restarted
    r.onFailed('ffn1', () => restarted.push('ffn1 again')); // 2 s back-off
    expect(r.setPolicy(restartPolicySchema.parse({ policy: 'never', maxRestarts: 3 }))).toEqual(['ffn1']);
    expect(r.current.policy).toBe('never');
    expect(r.pending('ffn1')).toBe(false);
    vi.advanceTimersByTime(60_000);
    expect(restarted).toEqual(['ffn0', 'ffn1']);
    expect(r.onFailed('ffn0', () => restarted.push('no'))).toBeNull();
    expect(r.setPolicy(restartPolicySchema.parse({ policy: 'on-failure', maxRestarts: 3 }))).toEqual([]);
    expect(r.onFailed('ffn0', () => restarted.push('ffn0 again'))).toEqual({ attempt: 2, delayMs: 2000 });
    vi.advanceTimersByTime(2000);
    expect(restarted).toEqual(['ffn0', 'ffn1', 'ffn0 again']);
  });

  it('setPolicy: a lower maxRestarts gives up at the next failure of a longer streak', () => {
    const r = new RankRestarts<string>(restartPolicySchema.parse({ policy: 'on-failure', maxRestarts: 10 }));
    r.onFailed('a', () => undefined);
    vi.advanceTimersByTime(1000);
    r.onFailed('a', () => undefined);
    vi.advanceTimersByTime(2000);
    expect(r.streak('a')).toBe(2);
    r.setPolicy(restartPolicySchema.parse({ policy: 'on-failure', maxRestarts: 2 }));
    expect(r.onFailed('a', () => undefined)).toBeNull();
    expect(r.total('a')).toBe(2);
  });
});
