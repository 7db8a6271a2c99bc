import { describe, expect, it } from 'vitest';
import { loadTestingAddon } from '../testing/testingAddon.js';

// The CUDA entry points read their options before touching a device, so a wrongly typed
// option is refused with a named error on any machine where the CUDA variant is built.
const addon = loadTestingAddon();
const cuda = addon.probe().variant === 'cuda';
const bad = (options: Record<string, unknown>): never => options as never;

describe.skipIf(!cuda)('CUDA binding options', () => {
  it('names the entry point, the option and the expected type', () => {
    expect(() => addon.cudaConformance(bad({ seed: 'x' }))).toThrow('cudaConformance: option seed must be a number');
  });
});
