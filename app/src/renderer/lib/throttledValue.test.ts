import { describe, expect, it } from 'vitest';
import { nextRenderDelayMs } from './throttledValue.js';

describe('nextRenderDelayMs', () => {
  it('waits out the rest of the interval since the last render, never less than 0', () => {
    expect(nextRenderDelayMs(1000, 950, 100)).toBe(50);
    expect(nextRenderDelayMs(1000, 900, 100)).toBe(0);
    expect(nextRenderDelayMs(1000, 0, 100)).toBe(0); // the first token shows at once
    // Each new token recomputes the same deadline: a stream of tokens cannot postpone the render.
    expect(1000 + nextRenderDelayMs(1000, 950, 100)).toBe(1030 + nextRenderDelayMs(1030, 950, 100));
  });
});
