import { describe, expect, it } from 'vitest';
import { atBottom, stickSlackPx } from './stickToBottom.js';

describe('atBottom', () => {
  it('is true at the bottom and within the slack, false once the reader scrolled up further', () => {
    expect(atBottom({ scrollTop: 600, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
    expect(atBottom({ scrollTop: 600 - stickSlackPx, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
    expect(atBottom({ scrollTop: 600 - stickSlackPx - 1, scrollHeight: 1000, clientHeight: 400 })).toBe(false);
    expect(atBottom({ scrollTop: 0, scrollHeight: 300, clientHeight: 400 })).toBe(true); // nothing to scroll
  });
});
