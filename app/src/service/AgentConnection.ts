/**
 * One console -> afd-agent WebSocket connection: token auth in the upgrade, requests
 * with ids and timeouts, results validated against the shared protocol, events fanned
 * out to a listener, pings for latency, and reconnects with backoff (never after the
 * agent refused the token).
 */
import WebSocket from 'ws';
import {
  AGENT_MAX_MESSAGE_BYTES,
  decodeAgentMessage,
  parseAgentResult,
  RequestCorrelator,
  type AgentEvent,
  type AgentMethod,
  type AgentParamsInput,
  type AgentResult,
  type AgentInfo,
} from '@afd/shared';
import { describeAgentConnectError } from '@afd/agent/connectError';

export type ConnectionState = AgentInfo['state'];

export interface AgentConnectionOptions {
  /** ws:// or wss:// URL of the agent. */
  url: string;
  /** Agent token, sent as `Authorization: Bearer`. */
  token: string;
  /** Called on every agent event (hello, rank.*, topology.state, log.lines, metrics.snapshot, error). */
  onEvent: (event: AgentEvent) => void;
  /** Called whenever state, message or latency change. */
  onStatus: () => void;
  /** Default request timeout, ms. */
  requestTimeoutMs?: number;
  /** CA certificates (PEM) trusted for wss://; default the system CAs. */
  ca?: (string | Buffer)[];
  /** Ping period, ms (default 2000). */
  pingIntervalMs?: number;
  /** A ping unanswered this long makes the agent unreachable (default 3000). */
  pingTimeoutMs?: number;
  /** Unreachable this long: drop the connection and reconnect (default 20000). */
  unreachableResetMs?: number;
  /** Reconnect backoff bounds, ms. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
}

/** Turns a socket failure into a sentence a user can act on (shared with the CLI). */
export const describeConnectError = describeAgentConnectError;

/** Why the agent refused the token, said once: the agent's own reason when it gives one, else where the token is. */
export function tokenRefusal(url: string, agentReason: string): string {
  const why = agentReason.replace(/^(wrong|missing) agent token: /, '').trim();
  return `agent at ${url} rejected the token: ${why || "copy the token from the agent host's token file ($AFD_HOME/agent-token by default)"}`;
}

export class AgentConnection {
  state: ConnectionState = 'connecting';
  message: string | null = null;
  latencyMs: number | null = null;
  /** Host name from the agent's hello. */
  hostname: string | null = null;
  private ws: WebSocket | null = null;
  /** Pending requests by id, each with its method (to validate the result). */
  private readonly requests = new RequestCorrelator<AgentMethod>();
  private closed = false;
  private backoffMs: number;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private readyWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];

  constructor(private readonly opts: AgentConnectionOptions) {
    this.backoffMs = opts.reconnectMinMs ?? 500;
  }

  get url(): string {
    return this.opts.url;
  }

  /** Opens the socket; resolves on the agent's hello, rejects with a readable error on the first failure. */
  connect(): Promise<void> {
    const p = new Promise<void>((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
    this.open();
    return p;
  }

  private open(): void {
    if (this.closed) return;
    this.setState('connecting', null);
    const ws = new WebSocket(this.opts.url, {
      headers: { Authorization: `Bearer ${this.opts.token}` },
      maxPayload: AGENT_MAX_MESSAGE_BYTES,
      handshakeTimeout: 10_000,
      ...(this.opts.ca ? { ca: this.opts.ca } : {}),
    });
    this.ws = ws;
    let refused = false;
    ws.on('unexpected-response', (_req, res) => {
      refused = true;
      const status = res.statusCode ?? 0;
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8').slice(0, 500)));
      res.on('end', () => {
        const detail = body.trim();
        if (status === 401) this.fail('unauthorized', tokenRefusal(this.opts.url, detail), false);
        else if (status === 403) this.fail('error', `agent at ${this.opts.url} refused this client (${detail || 'forbidden'})`, false);
        else this.fail('error', `agent at ${this.opts.url} answered HTTP ${status} instead of a WebSocket upgrade${detail ? `: ${detail}` : ''}: is that URL an afd-agent?`, true);
        ws.terminate();
      });
      res.on('error', () => ws.terminate());
    });
    ws.on('error', (err: Error & { code?: string }) => {
      // A refused upgrade is reported by 'unexpected-response' with the agent's reason.
      if (refused || this.state === 'unauthorized') return;
      this.fail(this.state === 'connected' || this.state === 'unreachable' ? 'disconnected' : 'error', describeAgentConnectError(this.opts.url, err), true);
    });
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.stopPing();
      this.requests.failAll(new Error(`connection to the agent at ${this.opts.url} closed`));
      if (this.state === 'connected' || this.state === 'connecting' || this.state === 'unreachable') {
        this.setState('disconnected', `connection to the agent at ${this.opts.url} closed; reconnecting`);
        this.scheduleReconnect();
      }
    });
    ws.on('message', (data: WebSocket.RawData) => this.onFrame(data.toString('utf8')));
  }

  private fail(state: ConnectionState, message: string, retry: boolean): void {
    this.setState(state, message);
    for (const w of this.readyWaiters.splice(0)) w.reject(new Error(message));
    if (retry) this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.opts.reconnectMaxMs ?? 5000);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.ws?.terminate();
      this.ws = null;
      this.open();
    }, delay);
  }

  private onFrame(text: string): void {
    const decoded = decodeAgentMessage(text);
    if (!decoded.ok) {
      this.opts.onEvent({ type: 'error', requestId: null, message: `agent ${this.opts.url} sent an invalid message: ${decoded.error}` });
      return;
    }
    const msg = decoded.value;
    if (msg.type === 'response') {
      // An answer to no pending request (one that timed out) is dropped.
      this.requests.settle(msg.id, (method) => {
        if (!msg.ok) return { ok: false, error: new Error(msg.error.message) };
        const parsed = parseAgentResult(method, msg.result);
        return parsed.ok ? { ok: true, value: parsed.value } : { ok: false, error: new Error(`agent at ${this.opts.url} answered ${method} with ${parsed.error}`) };
      });
      return;
    }
    if (msg.type === 'hello') {
      this.hostname = msg.hostname;
      this.backoffMs = this.opts.reconnectMinMs ?? 500;
      this.setState('connected', null);
      this.startPing();
      for (const w of this.readyWaiters.splice(0)) w.resolve();
    }
    this.opts.onEvent(msg);
  }

  /** Sends a request and resolves with its validated result; rejects with the agent's message. */
  request<M extends AgentMethod>(method: M, params: AgentParamsInput<M>, timeoutMs?: number): Promise<AgentResult<M>> {
    if (this.state !== 'connected') {
      return Promise.reject(new Error(`agent at ${this.opts.url} is not connected (${this.state}${this.message ? `: ${this.message}` : ''})`));
    }
    return this.send(method, params, timeoutMs);
  }

  /** Sends on the open socket whatever the state says (pings go out while unreachable). */
  private send<M extends AgentMethod>(method: M, params: AgentParamsInput<M>, timeoutMs?: number): Promise<AgentResult<M>> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new Error(`agent at ${this.opts.url} is not connected (${this.state}${this.message ? `: ${this.message}` : ''})`));
    }
    const ms = timeoutMs ?? this.opts.requestTimeoutMs ?? 30_000;
    const { id, answer } = this.requests.start<AgentResult<M>>(method, ms, () => new Error(`agent at ${this.opts.url} did not answer ${method} within ${ms} ms`));
    const unsent = (err: Error): void => void this.requests.fail(id, new Error(`could not send ${method} to the agent at ${this.opts.url}: ${err.message}`));
    try {
      ws.send(JSON.stringify({ id, method, params }), (err) => err && unsent(err));
    } catch (err) {
      unsent(err as Error);
    }
    return answer;
  }

  /**
   * Pings every pingIntervalMs (one at a time). An unanswered ping makes a connected agent
   * unreachable (the socket stays: a healed partition resumes it); the next answer makes
   * it connected again; unreachable for unreachableResetMs, the socket is dropped and the
   * usual reconnects take over.
   */
  private startPing(): void {
    this.stopPing();
    const timeoutMs = this.opts.pingTimeoutMs ?? 3000;
    let unreachableSince = 0;
    let inFlight = false;
    const ping = (): void => {
      if (inFlight) return;
      inFlight = true;
      const t0 = performance.now();
      this.send('ping', {}, timeoutMs).then(
        () => {
          inFlight = false;
          this.latencyMs = Math.round((performance.now() - t0) * 10) / 10;
          unreachableSince = 0;
          if (this.state === 'unreachable') this.setState('connected', null);
          else this.opts.onStatus();
        },
        () => {
          inFlight = false;
          if (this.state !== 'connected' && this.state !== 'unreachable') return;
          unreachableSince ||= Date.now();
          if (this.state === 'connected') {
            this.latencyMs = null;
            this.setState('unreachable', `agent at ${this.opts.url} has not answered for ${timeoutMs / 1000} s: the network is cut or the host is down; its ranks keep running there, and the console reconnects when it answers`);
          } else if (Date.now() - unreachableSince > (this.opts.unreachableResetMs ?? 20_000)) {
            this.ws?.terminate(); // 'close' schedules the reconnects
          }
        },
      );
    };
    ping();
    this.pingTimer = setInterval(ping, this.opts.pingIntervalMs ?? 2000);
    this.pingTimer.unref();
  }

  private stopPing(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
  }

  private setState(state: ConnectionState, message: string | null): void {
    this.state = state;
    this.message = message;
    // A ping time is only true of a live connection.
    if (state !== 'connected') this.latencyMs = null;
    this.opts.onStatus();
  }

  /** Closes for good (no reconnect). */
  close(): void {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.stopPing();
    this.requests.failAll(new Error(`connection to the agent at ${this.opts.url} was closed by the console`));
    for (const w of this.readyWaiters.splice(0)) w.reject(new Error('connection closed'));
    this.ws?.close();
    this.ws = null;
  }
}
