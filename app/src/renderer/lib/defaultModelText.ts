/**
 * What the Topology screen says an empty model directory launches: the model each rank
 * agent reports as its default (inventory.defaultModel, resolved the way the agent's
 * launch resolves it), so the hint names the model that will load, not a guess.
 */
import type { AgentInfo, DefaultModel } from '@afd/shared';

/** One sentence about a default model. */
export function defaultModelSentence(m: DefaultModel): string {
  if (m.kind === 'demo') return `${m.name}, the trained demo model in ${m.dir}${m.description ? `; ${m.description}` : ''}`;
  return `${m.name}, a tiny Qwen3-MoE with random weights (its replies are not language; made in ${m.dir} at the first launch if missing)`;
}


/**
 * The hint's lines for the agents that run ranks: one line when they all load the same
 * model, else one per agent ("id: ..."). With no rank agent yet, a line saying what decides it.
 */
export function defaultModelLines(rankAgents: readonly string[], agents: readonly Pick<AgentInfo, 'agentId' | 'inventory'>[]): string[] {
  if (rankAgents.length === 0) return ["The agents' built-in model: the trained demo model where an agent's install carries it, else a tiny random-weight Qwen3-MoE. Connect an agent to see which."];
  const texts = rankAgents.map((id) => {
    const inventory = agents.find((a) => a.agentId === id)?.inventory;
    if (!inventory) return "the agent's built-in model (not known until the agent is connected)";
    if (!inventory.defaultModel) return "the agent's built-in model (this agent does not say which: an older agent)";
    return defaultModelSentence(inventory.defaultModel);
  });
  if (new Set(texts).size === 1) return [`The built-in model: ${texts[0]!}.`];
  return texts.map((t, i) => `${rankAgents[i]!}: ${t}.`);
}
