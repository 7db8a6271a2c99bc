/**
 * A typed client of the agent protocol: `request(method, params)` resolves with the
 * validated result or rejects with the agent's error; events arrive through `onEvent`.
 * Used by `afd-agent launch --hosts` and the integration tests; the console may use it too.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import {
  AGENT_MAX_MESSAGE_BYTES,
  decodeAgentMessage,
  parseAgentResult,
  type AgentEvent,
  type AgentMethod,
  type AgentParamsInput,
  type AgentResult,
} from '@afd/shared';
import { describeAgentConnectError } from './connectError.js';

/** A failed request: the agent's error code and message. */
export class AgentCallError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'AgentCallError';
  }
}

export interface AgentClientOptions {
  /** Extra headers (e.g. Origin in tests). */
  headers?: Record<string, string>;
  /** CA certificates (or a self-signed certificate) to trust for wss://; replaces the system CAs. */
  ca?: string | Buffer | (string | Buffer)[];
  /** Connect timeout (default 10 s). */
  timeoutMs?: number;
  /** Receives every event from the start (the hello and the first topology.state arrive with the upgrade). */
  onEvent?: (e: AgentEvent) => void;
}

export class AgentClient {
  private readonly pending = new Map<string, { method: AgentMethod; resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Set<(e: AgentEvent) => void>();
  private closedError: Error | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.onMessage(data.toString()));
    ws.on('close', (code, reason) => {
      this.closedError = new Error(`agent connection closed (${code}${reason.length ? `: ${reason.toString()}` : ''})`);
      for (const p of this.pending.values()) p.reject(this.closedError);
      this.pending.clear();
    });
  }

  /** Connects; rejects with the agent's HTTP refusal (status and reason) when auth fails. */
  static connect(url: string, token: string, options: AgentClientOptions = {}): Promise<AgentClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, {
        headers: { authorization: `Bearer ${token}`, ...options.headers },
        maxPayload: AGENT_MAX_MESSAGE_BYTES * 4,
        handshakeTimeout: options.timeoutMs ?? 10_000,
        ...(options.ca ? { ca: options.ca } : {}),
      });
      const client = new AgentClient(ws);
      if (options.onEvent) client.onEvent(options.onEvent);
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          const why = body.trim();
          const message =
            res.statusCode === 401
              ? `agent at ${url} rejected the token (HTTP 401${why ? `: ${why}` : ''}): use the token in that agent's token file ($AFD_HOME/agent-token on its host)`
              : `agent at ${url} refused the connection (HTTP ${res.statusCode}${why ? `: ${why}` : ''})`;
          reject(new AgentCallError(String(res.statusCode), message));
        });
      });
      ws.once('error', (err: Error & { code?: string }) => reject(Object.assign(new Error(describeAgentConnectError(url, err)), { code: err.code })));
    });
  }

  onEvent(listener: (e: AgentEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves with the first event that matches, or rejects after timeoutMs. */
  waitFor<E extends AgentEvent>(match: (e: AgentEvent) => e is E, timeoutMs?: number): Promise<E>;
  waitFor(match: (e: AgentEvent) => boolean, timeoutMs?: number): Promise<AgentEvent>;
  waitFor(match: (e: AgentEvent) => boolean, timeoutMs = 30_000): Promise<AgentEvent> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`no matching agent event within ${timeoutMs} ms`));
      }, timeoutMs);
      const off = this.onEvent((e) => {
        if (!match(e)) return;
        clearTimeout(timer);
        off();
        resolve(e);
      });
    });
  }

  private onMessage(text: string): void {
    const decoded = decodeAgentMessage(text);
    if (!decoded.ok) {
      for (const l of this.listeners) l({ type: 'error', requestId: null, message: `client could not read an agent frame: ${decoded.error}` });
      return;
    }
    const msg = decoded.value;
    if (msg.type === 'response') {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.ok) {
        const result = parseAgentResult(p.method, msg.result);
        if (result.ok) p.resolve(result.value);
        else p.reject(new AgentCallError('bad-response', result.error));
      } else {
        p.reject(new AgentCallError(msg.error.code, msg.error.message));
      }
      return;
    }
    for (const l of this.listeners) l(msg);
  }

  request<M extends AgentMethod>(method: M, params: AgentParamsInput<M>, timeoutMs = 120_000): Promise<AgentResult<M>> {
    if (this.closedError) return Promise.reject(this.closedError);
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method} got no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        method,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as AgentResult<M>);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Sends a raw frame (tests of malformed input). */
  sendRaw(data: string | Buffer): void {
    this.ws.send(data);
  }

  /** Closes; a peer that does not answer the close within timeoutMs (a partition) is dropped. */
  close(timeoutMs = 2000): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.ws.terminate(), timeoutMs);
      this.ws.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      this.ws.close();
    });
  }
}
