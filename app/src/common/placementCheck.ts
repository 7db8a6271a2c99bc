/**
 * Checks a launch spec against the connected agents before anything starts (used by
 * ConsoleService and by the Topology screen live validation): every
 * placement names a connected agent, and the device it names exists there.
 */
import type { AgentInfo, LaunchSpec } from '@afd/shared';

export interface AgentView {
  state: AgentInfo['state'];
  inventory: AgentInfo['inventory'];
}

/** Every placement that cannot run, each with what to do; empty when all can. */
export function placementProblems(spec: Pick<LaunchSpec, 'placements'>, agentOf: (agentId: string) => AgentView | undefined): string[] {
  const problems: string[] = [];
  for (const p of spec.placements) {
    const what = `${p.role} rank ${p.rank}`;
    const a = agentOf(p.agentId);
    if (!a) {
      problems.push(`${what} is placed on agent "${p.agentId}", which the console does not know; add it on the Agents screen`);
      continue;
    }
    if (a.state !== 'connected') {
      problems.push(`${what} is placed on agent "${p.agentId}", which is ${a.state}; reconnect it or pick another agent`);
      continue;
    }
    if (p.backend === 'cuda') {
      const gpus = a.inventory?.devices.filter((d) => d.kind === 'cuda') ?? [];
      if (gpus.length === 0) problems.push(`${what} asks for CUDA on agent "${p.agentId}", which has no CUDA device; choose the CPU backend`);
      else if (!gpus.some((d) => d.index === p.deviceIndex)) {
        problems.push(`${what} asks for cuda:${p.deviceIndex} on agent "${p.agentId}", which has ${gpus.map((d) => `cuda:${d.index}`).join(', ')}`);
      }
    }
  }
  return problems;
}

/** Throws an Error listing every placement that cannot run, with what to do. */
export function checkPlacements(spec: Pick<LaunchSpec, 'placements'>, agentOf: (agentId: string) => AgentView | undefined): void {
  const problems = placementProblems(spec, agentOf);
  if (problems.length > 0) throw new Error(`cannot launch: ${problems.join('; ')}`);
}
