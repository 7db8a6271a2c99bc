/**
 * Test helper: the FFN role's ffnForward equals the colocated engine's on every layer, for
 * one fixed hidden batch of 3 rows, and is not all zeros.
 */
import { expect } from 'vitest';
import type { Engine } from '../engine.js';

export async function expectFfnForwardEqual(colocated: Engine, ffn: Engine): Promise<void> {
  const H = ffn.info.hiddenSize;
  const hidden = Float32Array.from({ length: 3 * H }, (_, i) => Math.sin(i * 0.37));
  for (let layer = 0; layer < ffn.info.numLayers; layer++) {
    const out = await ffn.ffnForward(layer, hidden, 3);
    expect(out).toEqual(await colocated.ffnForward(layer, hidden, 3));
    expect(out.some((v) => v !== 0)).toBe(true);
  }
}
