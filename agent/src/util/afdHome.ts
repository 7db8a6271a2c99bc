/**
 * The agent's home folder, the one place that decides it: $AFD_HOME when set and not
 * empty, else ~/.afd. It holds the agent token (agent-token) and the models the agent makes
 * or lists (models/).
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { agentEnv } from './env.js';

/** $AFD_HOME, else ~/.afd (an empty AFD_HOME counts as unset). */
export function afdHome(env: NodeJS.ProcessEnv = process.env): string {
  return agentEnv(env).home ?? join(homedir(), '.afd');
}

/** Where the agent keeps and lists model folders: <home>/models. */
export function afdModelsDir(home: string = afdHome()): string {
  return join(home, 'models');
}
