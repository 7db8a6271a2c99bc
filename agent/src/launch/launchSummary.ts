/**
 * The summary `afd-agent launch` prints on stdout once every rank is ready: the front
 * router(s), then one line per rank with its URL (rankUrlText: a remote rank's loopback URL
 * says where it is reachable and through what) and pid, one line per GPU that holds several
 * ranks (MPS or time-sliced), then how to stop.
 */
import { gpuShareText, rankUrlText, type RemoteRankHost, type TopologyState } from '@afd/shared';

/** One agent of the launch as the summary needs it. */
export interface SummaryAgent {
  agentId: string;
  /** Its host when it is not the user's (a remote --hosts agent); null for the local one. */
  remote: RemoteRankHost | null;
  /** Its last topology.state; undefined before any. */
  state: TopologyState | undefined;
}

export function launchSummary(name: string, agents: readonly SummaryAgent[], seconds: number): string {
  const lines = [`${name} ready in ${seconds.toFixed(1)} s`];
  const several = agents.length > 1;
  for (const a of agents) {
    const s = a.state;
    if (!s) continue;
    if (s.routerUrl) lines.push(`  OpenAI API: ${s.routerUrl}/v1  (front router over ${s.ranks.filter((r) => r.role === 'attention' || r.role === 'colocated').length} rank(s)${several ? ` on ${a.agentId}` : ''})`);
    for (const r of s.ranks) {
      const url = r.apiUrl === null ? '-' : rankUrlText(r.apiUrl, r.role, a.remote);
      lines.push(`  ${several ? `${a.agentId} ` : ''}${r.role} ${r.rank}: ${url}  pid ${r.pid ?? '-'}`);
    }
    for (const g of s.gpus.filter((gpu) => gpu.sharing !== 'exclusive')) lines.push(`  ${several ? `${a.agentId} ` : ''}${gpuShareText(g)}`);
  }
  lines.push('Ctrl-C stops every rank.');
  return `${lines.join('\n')}\n`;
}
