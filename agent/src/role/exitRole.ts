/**
 * How a role process ends. Normally process.exit. But when the native addon left a thread
 * inside a library call that may never return (an NCCL abort after the FFN peer died), a
 * normal exit runs the CUDA runtime's teardown under that thread and can crash the
 * process after it already said "stopped": then leave with the addon's _exit instead.
 * Both paths flush stdio first (stdout/stderr are synchronous on Linux pipes and files).
 */
import { nativeExitHooks, type NativeExitHooks } from '@afd/native';

function nativeHooks(): NativeExitHooks | null {
  try {
    return nativeExitHooks();
  } catch {
    return null; // the addon never loaded (e.g. a bad build): nothing native can be stuck
  }
}

export function exitRole(code: number, hooks: NativeExitHooks | null = nativeHooks(), exit: (code: number) => never = process.exit): never {
  if (hooks && hooks.stuckNativeThreads() > 0) hooks.exitNow(code);
  return exit(code);
}
