/**
 * The front routers' request logs as the console holds them: per agent, the newest
 * REQUEST_LOG_CAPACITY summaries, replaced by the agent's whole log after each (re)connect
 * and extended by its requests.logged events. Bodies stay on the agents (requests.get).
 */
import { REQUEST_LOG_CAPACITY, type LoggedRequest, type RequestSummary } from '@afd/shared';

export class RequestLogs {
  private readonly byAgent = new Map<string, RequestSummary[]>();

  /** The agent's whole log (after a (re)connect). */
  replace(agentId: string, requests: readonly RequestSummary[]): void {
    this.byAgent.set(agentId, requests.slice(-REQUEST_LOG_CAPACITY));
  }

  /** Requests the agent logged since. */
  append(agentId: string, requests: readonly RequestSummary[]): void {
    const list = [...(this.byAgent.get(agentId) ?? []), ...requests];
    this.byAgent.set(agentId, list.length > REQUEST_LOG_CAPACITY ? list.slice(-REQUEST_LOG_CAPACITY) : list);
  }

  remove(agentId: string): void {
    this.byAgent.delete(agentId);
  }

  /** Every agent's requests, oldest first (by arrival). */
  list(): LoggedRequest[] {
    const all = [...this.byAgent].flatMap(([agentId, list]) => list.map((r) => ({ ...r, agentId })));
    return all.sort((a, b) => a.startedAtMs - b.startedAtMs || a.id - b.id);
  }
}
