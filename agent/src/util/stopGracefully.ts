/**
 * The graceful stop of a child process (or its process group): SIGTERM, then SIGKILL when
 * it has not exited after `graceMs`; resolves with what `exited` resolves with.
 */
export async function stopGracefully<T>(signal: (sig: NodeJS.Signals) => void, exited: Promise<T>, graceMs: number): Promise<T> {
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), graceMs);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}
