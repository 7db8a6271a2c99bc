/**
 * The agent's WebSocket server (`afd-agent serve`). Auth and Origin are checked in the
 * HTTP upgrade, before a socket exists; every frame is size-capped, parsed and validated
 * with the shared zod schemas, and a bad frame is answered with an `error` event (the
 * connection stays up). Dead clients are dropped by ping/pong heartbeats. Plain GET
 * /health answers 200 for load balancers and Kubernetes probes (it reveals nothing).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import {
  AGENT_MAX_MESSAGE_BYTES,
  AGENT_PROTOCOL_VERSION,
  REQUEST_LOG_CAPACITY,
  agentRequestSchema,
  decodeJsonMessage,
  requestIdOf,
  type AgentRequest,
  type LogLine,
  type ProcessRole,
  type RequestSummary,
} from '@afd/shared';
import type { Logger } from '../util/logger.js';
import { toLogLine } from '../launch/logLine.js';
import { inspectModelDir } from '../model/inspectModel.js';
import { listPlanProfiles } from '../plan/profileFiles.js';
import { AgentSession } from './AgentSession.js';
import type { InventorySource } from './inventory.js';
import { AgentRequestError, type LaunchManager } from './LaunchManager.js';
import { checkBindPolicy } from './bindPolicy.js';
import { minTokenLength } from './tokenFile.js';
import { agentSubprotocol, checkUpgrade } from './upgradeAuth.js';

export interface AgentServerOptions {
  host: string;
  /** 0 = ephemeral (tests). */
  port: number;
  token: string;
  /** PEM certificate and key; enables wss://. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Origins browsers may connect from (clients without Origin are always allowed). */
  allowedOrigins?: string[];
  /** Frames larger than this are answered with an error (default AGENT_MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /** Ping interval; a client that misses one pong is dropped (default 15 s). */
  heartbeatMs?: number;
  /** Log lines are batched into log.lines frames this often (default 100 ms). */
  logFlushMs?: number;
  agentVersion: string;
  manager: LaunchManager;
  inventory: InventorySource;
  logger: Logger;
}

export class AgentServer {
  private readonly http: Server;
  private readonly wss: WebSocketServer;
  private readonly sessions = new Set<AgentSession>();
  private heartbeat: NodeJS.Timeout | undefined;
  private logTimer: NodeJS.Timeout | undefined;
  private readonly pendingLogs = new Map<string, { role: ProcessRole; rank: number; lines: LogLine[] }>();
  /** Request log records not yet sent to subscribers (flushed with the log lines). */
  private pendingRequests: RequestSummary[] = [];
  private readonly unsubscribe: (() => void)[] = [];
  private readonly maxBytes: number;
  private boundUrl = '';

  constructor(private readonly opts: AgentServerOptions) {
    if (opts.token.length < minTokenLength) throw new Error(`the agent token must have at least ${minTokenLength} characters (see loadOrCreateToken)`);
    checkBindPolicy({ host: opts.host, hasTls: opts.tls !== undefined });
    this.maxBytes = opts.maxMessageBytes ?? AGENT_MAX_MESSAGE_BYTES;
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => this.onHttp(req, res);
    this.http = opts.tls ? createHttpsServer({ cert: opts.tls.cert, key: opts.tls.key }, onRequest) : createHttpServer(onRequest);
    this.wss = new WebSocketServer({
      noServer: true,
      // Hard limit: ws closes the socket above it (1009). Frames between the soft cap and this
      // are read and answered with an error instead, so a client learns what it did wrong.
      maxPayload: Math.max(this.maxBytes * 4, 1 << 20),
      handleProtocols: (protocols) => (protocols.has(agentSubprotocol) ? agentSubprotocol : false),
    });
    this.http.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    this.http.on('clientError', (_err, socket) => socket.destroy());
  }

  /** ws:// or wss:// URL the server listens on. */
  get url(): string {
    return this.boundUrl;
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen({ host: this.opts.host, port: this.opts.port }, () => {
        this.http.off('error', reject);
        resolve();
      });
    });
    const addr = this.http.address() as AddressInfo;
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    this.boundUrl = `${this.opts.tls ? 'wss' : 'ws'}://${host}:${addr.port}`;
    const hb = this.opts.heartbeatMs ?? 15_000;
    this.heartbeat = setInterval(() => this.beat(), hb);
    this.heartbeat.unref();
    this.unsubscribe.push(this.opts.manager.onEvent((e) => this.sessions.forEach((s) => s.deliver(e))));
    this.unsubscribe.push(this.opts.manager.onLog((role, rank, line) => this.queueLog(role, rank, toLogLine(line))));
    this.unsubscribe.push(this.opts.manager.requests.onRecord((r) => this.queueRequest(r)));
    return this.boundUrl;
  }

  private onHttp(req: IncomingMessage, res: ServerResponse): void {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    res.writeHead(426, { 'content-type': 'text/plain' }).end('afd-agent speaks WebSocket (see docs/agent.md)\n');
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const verdict = checkUpgrade(req, { token: this.opts.token, allowedOrigins: this.opts.allowedOrigins ?? [] });
    const remote = `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? '?'}`;
    if (!verdict.ok) {
      this.opts.logger.warn({ remote, status: verdict.status, origin: req.headers.origin }, `refused connection: ${verdict.reason}`);
      const text = verdict.status === 401 ? 'Unauthorized' : 'Forbidden';
      socket.end(`HTTP/1.1 ${verdict.status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n${verdict.reason}\n`);
      socket.destroy();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, remote));
  }

  private onConnection(ws: WebSocket, remote: string): void {
    const session = new AgentSession(ws, remote);
    this.sessions.add(session);
    this.opts.logger.info({ remote }, 'client connected');
    ws.on('pong', () => (session.alive = true));
    ws.on('message', (data, isBinary) => void this.onMessage(session, data, isBinary));
    ws.on('error', (err) => this.opts.logger.warn({ remote, err: err.message }, 'client socket error'));
    ws.on('close', () => {
      this.sessions.delete(session);
      this.opts.logger.info({ remote }, 'client disconnected');
    });
    session.send({ type: 'hello', protocolVersion: AGENT_PROTOCOL_VERSION, agentVersion: this.opts.agentVersion, hostname: hostname() });
    session.send({ type: 'topology.state', state: this.opts.manager.state() });
  }

  private async onMessage(session: AgentSession, data: RawData, isBinary: boolean): Promise<void> {
    const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data.byteLength;
    if (isBinary) {
      session.error(null, 'binary frames are not supported: send JSON text frames');
      return;
    }
    if (size > this.maxBytes) {
      session.error(null, `agent request is ${size} bytes, over the ${this.maxBytes}-byte limit`);
      return;
    }
    const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8');
    const decoded = decodeJsonMessage(agentRequestSchema, text, this.maxBytes, 'agent request');
    if (!decoded.ok) {
      session.error(requestIdOf(text), decoded.error);
      return;
    }
    const request = decoded.value;
    try {
      session.respondOk(request, await this.handle(session, request));
    } catch (e) {
      if (e instanceof AgentRequestError) {
        session.respondError(request.id, e.code, e.message);
      } else {
        this.opts.logger.error({ err: e, method: request.method }, 'request failed');
        session.respondError(request.id, 'internal', `${request.method} failed: ${(e as Error).message}`);
      }
    }
  }

  private async handle(session: AgentSession, req: AgentRequest): Promise<unknown> {
    const m = this.opts.manager;
    switch (req.method) {
      case 'ping':
        return { timeMs: Date.now() };
      case 'inventory.get':
        return this.opts.inventory.get();
      case 'model.inspect':
        return inspectModelDir(req.params.dir);
      case 'plan.profiles':
        return listPlanProfiles();
      case 'topology.launch':
        this.opts.logger.info({ launchId: req.params.launchId, agentId: req.params.agentId }, 'launch requested');
        return m.launch(req.params);
      case 'topology.stop':
        return m.stop(req.params.graceMs);
      case 'topology.restart':
        return m.restart();
      case 'topology.setRestartPolicy':
        this.opts.logger.info({ launchId: req.params.launchId, policy: req.params.policy, maxRestarts: req.params.maxRestarts }, 'restart policy change requested');
        return m.setRestartPolicy(req.params);
      case 'logs.get':
        return { lines: m.logs(req.params.role, req.params.rank, req.params.tail) };
      case 'logs.subscribe':
        session.logsSubscribed = true;
        return {};
      case 'logs.unsubscribe':
        session.logsSubscribed = false;
        return {};
      case 'metrics.subscribe':
        session.metricsIntervalMs = req.params.intervalMs;
        return { intervalMs: req.params.intervalMs };
      case 'metrics.unsubscribe':
        session.metricsIntervalMs = undefined;
        return {};
      case 'requests.subscribe':
        session.requestsSubscribed = true;
        return { requests: m.requests.summaries() };
      case 'requests.unsubscribe':
        session.requestsSubscribed = false;
        return {};
      case 'requests.get': {
        const detail = m.requests.get(req.params.id);
        if (!detail) throw new AgentRequestError('not-found', `request ${req.params.id} is not in this agent's request log (it keeps the newest ${REQUEST_LOG_CAPACITY}, and starts empty when the agent starts)`);
        return detail;
      }
    }
  }

  private queueLog(role: ProcessRole, rank: number, line: LogLine): void {
    if (![...this.sessions].some((s) => s.logsSubscribed)) return;
    const key = `${role}:${rank}`;
    let entry = this.pendingLogs.get(key);
    if (!entry) this.pendingLogs.set(key, (entry = { role, rank, lines: [] }));
    if (entry.lines.length < 1000) entry.lines.push(line); // bounded between flushes
    this.logTimer ??= setTimeout(() => this.flushLogs(), this.opts.logFlushMs ?? 100);
  }

  private queueRequest(r: RequestSummary): void {
    if (![...this.sessions].some((s) => s.requestsSubscribed)) return;
    this.pendingRequests.push(r);
    if (this.pendingRequests.length > REQUEST_LOG_CAPACITY) this.pendingRequests.shift(); // bounded between flushes
    this.logTimer ??= setTimeout(() => this.flushLogs(), this.opts.logFlushMs ?? 100);
  }

  private flushLogs(): void {
    this.logTimer = undefined;
    const requests = this.pendingRequests;
    this.pendingRequests = [];
    if (requests.length > 0) for (const s of this.sessions) s.deliverRequests(requests);
    for (const { role, rank, lines } of this.pendingLogs.values()) {
      for (const s of this.sessions) s.deliverLogs(role, rank, lines);
    }
    this.pendingLogs.clear();
  }

  private beat(): void {
    for (const s of this.sessions) {
      if (!s.alive) {
        this.opts.logger.warn({ remote: s.remote }, 'client missed a heartbeat; dropping it');
        s.ws.terminate();
        continue;
      }
      s.alive = false;
      s.ws.ping();
    }
  }

  /** Closes every client and the listener; the launch is stopped by the caller (serve). */
  async close(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.logTimer) clearTimeout(this.logTimer);
    this.unsubscribe.forEach((u) => u());
    for (const s of this.sessions) s.ws.close(1001, 'agent shutting down');
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    for (const s of this.sessions) s.ws.terminate();
    this.http.closeAllConnections?.();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
