import { describe, expect, it } from 'vitest';
import { exitRole } from './exitRole.js';

class Exited extends Error {
  constructor(readonly how: string, readonly code: number) {
    super(`${how} ${code}`);
  }
}

function hooks(stuck: number) {
  return {
    stuckNativeThreads: () => stuck,
    exitNow: (code: number): never => {
      throw new Exited('exitNow', code);
    },
  };
}
const processExit = (code: number): never => {
  throw new Exited('process.exit', code);
};

describe('exitRole', () => {
  it('exits normally when no native thread is stuck', () => {
    expect(() => exitRole(0, hooks(0), processExit)).toThrow(new Exited('process.exit', 0));
  });
  it('uses the native _exit when a thread is stuck in a library call', () => {
    expect(() => exitRole(1, hooks(2), processExit)).toThrow(new Exited('exitNow', 1));
  });
  it('exits normally when the addon is not available', () => {
    expect(() => exitRole(3, null, processExit)).toThrow(new Exited('process.exit', 3));
  });
});
