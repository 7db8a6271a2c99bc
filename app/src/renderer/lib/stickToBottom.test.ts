import { describe, expect, it } from 'vitest';
import { atBottom, stickSlackPx, stillStuck } from './stickToBottom.js';

describe('atBottom', () => {
  it('is true at the bottom and within the slack, false once the reader scrolled up further', () => {
    expect(atBottom({ scrollTop: 600, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
    expect(atBottom({ scrollTop: 600 - stickSlackPx, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
    expect(atBottom({ scrollTop: 600 - stickSlackPx - 1, scrollHeight: 1000, clientHeight: 400 })).toBe(false);
    expect(atBottom({ scrollTop: 0, scrollHeight: 300, clientHeight: 400 })).toBe(true); // nothing to scroll
  });
});

describe('stillStuck', () => {
  it('keeps following when our own scroll event arrives after the content grew past the slack', () => {
    // We scrolled to 600 (bottom of 1000); 300 px more arrived before the event fired.
    expect(stillStuck(true, 600, { scrollTop: 600, scrollHeight: 1300, clientHeight: 400 })).toBe(true);
  });
  it('unsticks when the reader scrolls up, and sticks again at the bottom', () => {
    expect(stillStuck(true, 600, { scrollTop: 0, scrollHeight: 1000, clientHeight: 400 })).toBe(false);
    expect(stillStuck(false, 0, { scrollTop: 300, scrollHeight: 1000, clientHeight: 400 })).toBe(false);
    expect(stillStuck(false, 300, { scrollTop: 600, scrollHeight: 1000, clientHeight: 400 })).toBe(true);
  });
});
