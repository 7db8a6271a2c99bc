/**
 * What the addon offers a process beyond the engine: the probe of its build and of the
 * machine (run it in a child process: a broken GPU stack may crash on load), and the exit
 * hooks of a role process (agent/src/role/exitRole.ts). Each call loads the addon, so each
 * throws, listing the paths tried, when it cannot load.
 */
import { loadAddon, type NativeAddon, type ProbeResult } from './addon.js';

/** What this addon build can do and what the machine offers. */
export function probe(): ProbeResult {
  return loadAddon().probe();
}

/** How a role process leaves when a native thread may be stuck in a library call. */
export type NativeExitHooks = Pick<NativeAddon, 'stuckNativeThreads' | 'exitNow'>;

/**
 * stuckNativeThreads: native threads left inside a library call that may never return (an
 * NCCL abort with a dead peer); while any runs, a normal exit can crash in the CUDA
 * runtime's teardown. exitNow: flushes stdio and ends the process with _exit(code).
 */
export function nativeExitHooks(): NativeExitHooks {
  const addon = loadAddon();
  return { stuckNativeThreads: () => addon.stuckNativeThreads(), exitNow: (code) => addon.exitNow(code) };
}
