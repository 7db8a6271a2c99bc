/**
 * One client connection: answers requests, and forwards events according to what the
 * client subscribed to (log lines, metrics at its chosen interval, the request log). Lifecycle events and
 * topology state go to every client. A slow client (large send buffer) loses log and
 * metrics frames rather than growing the agent's memory; responses are never dropped.
 */
import type { WebSocket } from 'ws';
import type { AgentEvent, AgentRequest, LogLine, ProcessRole, RequestSummary } from '@afd/shared';

/** Send buffer above which streamed frames (logs, metrics) are dropped for this client. */
export const slowClientBytes = 8 << 20;

export class AgentSession {
  alive = true;
  logsSubscribed = false;
  requestsSubscribed = false;
  metricsIntervalMs: number | undefined;
  private readonly lastMetricsMs = new Map<string, number>();

  constructor(
    readonly ws: WebSocket,
    readonly remote: string,
  ) {}

  send(message: unknown): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(JSON.stringify(message));
  }

  private get slow(): boolean {
    return this.ws.bufferedAmount > slowClientBytes;
  }

  /** Forwards an event if this client wants it. */
  deliver(event: AgentEvent): void {
    if (event.type === 'metrics.snapshot') {
      if (this.metricsIntervalMs === undefined || this.slow) return;
      const key = `${event.snapshot.stats.role}:${event.snapshot.stats.rank}`;
      const last = this.lastMetricsMs.get(key) ?? 0;
      // 10% slack so a 100 ms poll is not halved by jitter into 200 ms frames.
      if (event.snapshot.timestampMs - last < this.metricsIntervalMs * 0.9) return;
      this.lastMetricsMs.set(key, event.snapshot.timestampMs);
    }
    this.send(event);
  }

  deliverLogs(role: ProcessRole, rank: number, lines: LogLine[]): void {
    if (!this.logsSubscribed || this.slow) return;
    this.send({ type: 'log.lines', role, rank, lines });
  }

  deliverRequests(requests: RequestSummary[]): void {
    if (!this.requestsSubscribed || this.slow) return;
    this.send({ type: 'requests.logged', requests });
  }

  respondOk(request: Pick<AgentRequest, 'id'>, result: unknown): void {
    this.send({ type: 'response', id: request.id, ok: true, result });
  }

  respondError(id: string, code: string, message: string): void {
    this.send({ type: 'response', id, ok: false, error: { code, message } });
  }

  error(requestId: string | null, message: string): void {
    this.send({ type: 'error', requestId, message });
  }
}
