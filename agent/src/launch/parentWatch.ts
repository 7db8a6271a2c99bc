/**
 * For processes the agent supervises (role processes): notice when the agent is gone. The
 * agent keeps each child's stdin open as a pipe and never writes to it; if the agent dies,
 * even by SIGKILL, the pipe reaches EOF and the child is told, so it can stop itself and no
 * rank outlives its agent. The caller's `onGone` stops and exits the process (its own exit
 * path, e.g. exitRole's guard against a stuck NCCL teardown). Active only when
 * AFD_SUPERVISED=1 (set by the agent), so a role process started by hand in a terminal is
 * not affected. Returns whether it is active.
 */
import { agentEnv } from '../util/env.js';
export function whenSupervisorGone(onGone: () => void, env: NodeJS.ProcessEnv = process.env): boolean {
  if (!agentEnv(env).supervised) return false;
  const stdin = process.stdin;
  stdin.on('data', () => undefined); // the agent writes nothing; drain anyway
  stdin.once('end', onGone);
  stdin.resume();
  return true;
}
