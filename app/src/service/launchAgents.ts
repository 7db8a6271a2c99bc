/**
 * Requests the console sends to every agent of a launch at once (stop, the restart policy
 * switch): each agent's answer, and one line per agent that could not be asked or refused.
 */
import type { AgentMethod, AgentParamsInput, AgentResult, BridgeRequest, BridgeResponse } from '@afd/shared';
import type { AgentConnection } from './AgentConnection.js';
import type { LaunchTracker } from './LaunchTracker.js';

/** The connection of an agent the console knows; undefined when it was removed. */
export type ConnectionOf = (agentId: string) => AgentConnection | undefined;

export interface EachAgentOutcome<M extends AgentMethod> {
  /** Agents that answered, with their answer. */
  answers: { agentId: string; result: AgentResult<M> }[];
  /** One line per agent that did not: "agent b: <what> failed: why". */
  problems: string[];
}

/**
 * Sends `method` to every agent in `agentIds` in parallel; `what` names it in problems
 * ("stop"). `after` runs for each agent once it answered or failed.
 */
export async function requestEachAgent<M extends AgentMethod>(
  agentIds: readonly string[],
  connOf: ConnectionOf,
  what: string,
  method: M,
  params: AgentParamsInput<M>,
  timeoutMs: number,
  after?: (agentId: string) => void,
): Promise<EachAgentOutcome<M>> {
  const outcome: EachAgentOutcome<M> = { answers: [], problems: [] };
  await Promise.all(
    agentIds.map(async (agentId) => {
      const conn = connOf(agentId);
      if (!conn) {
        outcome.problems.push(`agent ${agentId} is no longer known to the console: check it by hand`);
        return;
      }
      try {
        outcome.answers.push({ agentId, result: await conn.request(method, params, timeoutMs) });
      } catch (err) {
        outcome.problems.push(`agent ${agentId}: ${what} failed: ${(err as Error).message}`);
      }
      after?.(agentId);
    }),
  );
  return outcome;
}

/**
 * The Launch screen's switch: changes the current launch's restart policy on every agent
 * of it, live. Resolves with the policy once every agent took it; rejects naming the agents
 * that did not (those that did report the new policy in their topology.state).
 */
export async function setLaunchRestartPolicy(
  tracker: LaunchTracker | null,
  connOf: ConnectionOf,
  change: BridgeRequest<'topology.setRestartPolicy'>,
): Promise<BridgeResponse<'topology.setRestartPolicy'>> {
  if (!tracker) throw new Error('no launch to change: launch a topology first');
  const { state } = tracker.progress();
  if (state === 'stopping' || state === 'stopped') throw new Error(`launch ${tracker.launchId} is ${state}: its restart policy can no longer change`);
  const { answers, problems } = await requestEachAgent(tracker.agentIds(), connOf, 'the restart policy change', 'topology.setRestartPolicy', { launchId: tracker.launchId, ...change }, 10_000);
  if (problems.length > 0) {
    const took = answers.map((a) => a.agentId);
    throw new Error(`${took.length > 0 ? `the restart policy changed on ${took.join(', ')} but not everywhere` : 'the restart policy did not change'}: ${problems.join('; ')}`);
  }
  const restart = answers[0]?.result.restart ?? { ...tracker.restartPolicy, ...change };
  tracker.setRestartPolicy(restart);
  return { restart };
}
