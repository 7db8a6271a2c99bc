/**
 * `afd-agent launch --hosts`' connection to one remote agent: the first connect fails
 * with a sentence that says what is wrong (token, CA, name, host down); afterwards a ping
 * every second tells when the agent stops answering (a network partition or a host that
 * went down: its ranks keep running there) and when it answers again, and a dropped
 * connection is reopened, so the launch keeps following that agent's events.
 */
import type { AgentEvent, AgentMethod, AgentParamsInput, AgentResult } from '@afd/shared';
import { AgentClient } from '../daemon/AgentClient.js';

export interface RemoteAgentOptions {
  url: string;
  token: string;
  /** CA certificates (PEM) to trust for wss:// (replace the system CAs). */
  ca?: (string | Buffer)[];
  onEvent: (event: AgentEvent) => void;
  /** Reachability changes, as sentences for the terminal. */
  onNote: (message: string) => void;
  /** Time between pings (default 1000 ms). */
  pingIntervalMs?: number;
  /** A ping unanswered this long makes the agent unreachable (default 3000 ms). */
  pingTimeoutMs?: number;
  /** Connect timeout of the first connect and of reconnects (default 5 s / 3 s). */
  connectTimeoutMs?: number;
}

export class RemoteAgent {
  /** "host:port" of the URL: the agent id used in placements. */
  readonly agentId: string;
  private client: AgentClient;
  private reachableValue = true;
  private closed = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  private constructor(
    private readonly opts: RemoteAgentOptions,
    client: AgentClient,
  ) {
    this.agentId = new URL(opts.url).host;
    this.client = client;
  }

  /** Connects; rejects with the described reason (the CLI prints it and exits 1). */
  static async connect(opts: RemoteAgentOptions): Promise<RemoteAgent> {
    const client = await AgentClient.connect(opts.url, opts.token, { ca: opts.ca, timeoutMs: opts.connectTimeoutMs ?? 5000, onEvent: opts.onEvent });
    const agent = new RemoteAgent(opts, client);
    agent.loop = agent.watch();
    return agent;
  }

  get reachable(): boolean {
    return this.reachableValue;
  }

  request<M extends AgentMethod>(method: M, params: AgentParamsInput<M>, timeoutMs?: number): Promise<AgentResult<M>> {
    return this.client.request(method, params, timeoutMs);
  }

  private setReachable(reachable: boolean, why: string): void {
    if (reachable === this.reachableValue) return;
    this.reachableValue = reachable;
    this.opts.onNote(
      reachable
        ? `${this.agentId}: agent reachable again${why ? ` (${why})` : ''}`
        : `${this.agentId}: agent unreachable (${why}); its ranks keep running there, waiting for it to answer`,
    );
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** Pings until closed; reconnects a dropped connection. */
  private async watch(): Promise<void> {
    const interval = this.opts.pingIntervalMs ?? 1000;
    const timeout = this.opts.pingTimeoutMs ?? 3000;
    while (!this.closed) {
      try {
        await this.client.request('ping', {}, timeout);
        this.setReachable(true, '');
      } catch (e) {
        if (this.closed) return;
        const text = (e as Error).message;
        if (/closed/.test(text)) {
          this.setReachable(false, `connection lost: ${text}`);
          await this.reconnect();
          continue;
        }
        this.setReachable(false, `no answer to a ping within ${timeout} ms: the network or the host is down`);
      }
      await this.sleep(interval);
    }
  }

  private async reconnect(): Promise<void> {
    while (!this.closed) {
      try {
        // The agent's hello and topology.state come with the upgrade: listen from the start.
        const client = await AgentClient.connect(this.opts.url, this.opts.token, { ca: this.opts.ca, timeoutMs: this.opts.connectTimeoutMs ?? 3000, onEvent: this.opts.onEvent });
        if (this.closed) {
          await client.close();
          return;
        }
        this.client = client;
        this.setReachable(true, 'reconnected');
        return;
      } catch {
        await this.sleep(2000);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.client.close();
    await this.loop;
  }
}
