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
  RequestCorrelator,
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
  /** Pending requests by id, each with its method (to validate the result). */
  private readonly requests = new RequestCorrelator<AgentMethod>({ newId: randomUUID });
  private readonly listeners = new Set<(e: AgentEvent) => void>();
  private closedError: Error | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.onMessage(data.toString()));
    ws.on('close', (code, reason) => {
      this.closedError = new Error(`agent connection closed (${code}${reason.length ? `: ${reason.toString()}` : ''})`);
      this.requests.failAll(this.closedError);
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
      // An answer to no pending request (one that timed out) is dropped.
      this.requests.settle(msg.id, (method) => {
        if (!msg.ok) return { ok: false, error: new AgentCallError(msg.error.code, msg.error.message) };
        const result = parseAgentResult(method, msg.result);
        return result.ok ? { ok: true, value: result.value } : { ok: false, error: new AgentCallError('bad-response', result.error) };
      });
      return;
    }
    for (const l of this.listeners) l(msg);
  }

  request<M extends AgentMethod>(method: M, params: AgentParamsInput<M>, timeoutMs = 120_000): Promise<AgentResult<M>> {
    if (this.closedError) return Promise.reject(this.closedError);
    const { id, answer } = this.requests.start<AgentResult<M>>(method, timeoutMs, () => new Error(`${method} got no answer within ${timeoutMs} ms`));
    const unsent = (err: Error): void => void this.requests.fail(id, new Error(`could not send ${method} to the agent: ${err.message}`));
    try {
      this.ws.send(JSON.stringify({ id, method, params }), (err) => err && unsent(err));
    } catch (err) {
      unsent(err as Error);
    }
    return answer;
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
