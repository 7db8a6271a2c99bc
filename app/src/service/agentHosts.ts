/**
 * Where other hosts reach each agent's ranks, for a launch spread over several agents:
 * the launch spec's agentHosts (the FFN ranks' rendezvous hosts). The console fills what
 * the spec leaves out with the address each agent advertises (`serve --advertise-host`,
 * or its specific --host), else the host of the URL the console reached it at.
 */
import type { LaunchSpec } from '@afd/shared';
import { isLoopbackHost } from '@afd/agent/bindPolicy';

export interface AgentAddress {
  /** The agent's advertised address (inventory.advertiseHost). */
  advertiseHost: string | null;
  /** The URL the console connected to. */
  url: string;
}

/** The spec with agentHosts for every agent of a multi-agent AFD launch; throws when an address cannot work. */
export function withAgentHosts(spec: LaunchSpec, addressOf: (agentId: string) => AgentAddress | undefined): LaunchSpec {
  if (spec.mode !== 'afd') return spec;
  const ids = [...new Set(spec.placements.map((p) => p.agentId))];
  if (ids.length < 2) return spec;
  const agentHosts: Record<string, string> = { ...spec.agentHosts };
  for (const id of ids) {
    if (agentHosts[id]) continue;
    const a = addressOf(id);
    if (!a) throw new Error(`no agent "${id}" is connected; add it on the Agents screen`);
    agentHosts[id] = a.advertiseHost ?? new URL(a.url).hostname.replace(/^\[(.*)\]$/, '$1');
  }
  const loopback = ids.filter((id) => isLoopbackHost(agentHosts[id]!));
  if (loopback.length > 0 && loopback.length < ids.length) {
    const id = loopback[0]!;
    throw new Error(
      `agent "${id}" is reached at ${agentHosts[id]}, a loopback address that the other agents' ranks cannot use: ` +
        `start it with --advertise-host <its address> (or add it by an address the other hosts reach too)`,
    );
  }
  return { ...spec, agentHosts };
}
