/**
 * How to start this same program again (for the probe child, role processes, agents).
 * In the bundle, argv[1] is agent/dist/afd-agent.cjs; we never go through a shell.
 */
import { agentEnv } from './env.js';
export interface SelfCommand {
  /** The Node binary. */
  file: string;
  /** Arguments that precede the subcommand (the script path). */
  args: string[];
}

export function selfCommand(): SelfCommand {
  const explicit = agentEnv().agentScript;
  const script = explicit ?? process.argv[1];
  if (!script) throw new Error('cannot locate the afd-agent script (process.argv[1] is empty); set AFD_AGENT_SCRIPT');
  return { file: process.execPath, args: [script] };
}
