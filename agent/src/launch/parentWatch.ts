/**
 * For processes the agent supervises (role processes): exit when the agent is gone. The
 * agent keeps each child's stdin open as a pipe and never writes to it; if the agent dies,
 * even by SIGKILL, the pipe reaches EOF and the child stops itself, so no rank outlives
 * its agent. Active only when AFD_SUPERVISED=1 (set by the agent), so a role process
 * started by hand in a terminal is not affected.
 */
export function exitWhenSupervisorGone(onGone: () => void | Promise<void>, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env['AFD_SUPERVISED'] !== '1') return false;
  const stdin = process.stdin;
  stdin.on('data', () => undefined); // the agent writes nothing; drain anyway
  stdin.once('end', () => {
    void Promise.resolve(onGone()).finally(() => process.exit(0));
  });
  stdin.resume();
  return true;
}
