/**
 * Browser mode: serves the built renderer and a WebSocket bridge to ConsoleService on
 * loopback. A per-run token (in the page URL's #fragment, never sent in an HTTP request
 * line) guards the bridge; it is checked in the upgrade together with the Origin, so
 * other local pages and processes cannot drive the console.
 */
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { BRIDGE_MAX_MESSAGE_BYTES, decodeBridgeWireMessage, type BridgeWireMessage } from '@afd/shared';
import type { ConsoleService } from '../service/ConsoleService.js';
import { serveStatic } from './staticFiles.js';

/** Subprotocol the bridge speaks. */
export const BRIDGE_SUBPROTOCOL = 'afd.bridge.v1';
/** Prefix of the subprotocol that carries the token (browsers cannot set headers). */
export const BRIDGE_TOKEN_PREFIX = 'afd.token.';
/** Above this many queued bytes a client is slow: metric pushes to it are dropped. */
const SLOW_CLIENT_BYTES = 4 << 20;

export interface WebHostOptions {
  service: ConsoleService;
  /** Folder of the built renderer (dist/renderer). */
  rendererDir: string;
  /** Loopback address to bind (default 127.0.0.1). */
  host?: string;
  /** Port; 0 = ephemeral (default). */
  port?: number;
  /** When `port` is taken, take any free port instead of failing (the default port of `npm start`). */
  fallbackToAnyPort?: boolean;
  /** Token; generated when omitted. */
  token?: string;
}

/** The call id of a frame that failed validation, when it has a readable one. */
export function callIdOf(text: string): string | null {
  try {
    const raw: unknown = JSON.parse(text);
    if (typeof raw === 'object' && raw !== null && typeof (raw as { id?: unknown }).id === 'string') {
      const id = (raw as { id: string }).id;
      return id.length > 0 && id.length <= 128 ? id : null;
    }
  } catch {
    // not JSON
  }
  return null;
}

function sameToken(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

export class WebHost {
  readonly token: string;
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private origin = '';
  /** Set when the asked-for port was taken and another one was used instead. */
  movedFromPort: number | null = null;

  constructor(private readonly opts: WebHostOptions) {
    const host = opts.host ?? '127.0.0.1';
    if (!['127.0.0.1', '::1', 'localhost'].includes(host)) {
      throw new Error(`the console web host binds to loopback only (got ${host}); reach it remotely through an SSH tunnel`);
    }
    this.token = opts.token ?? randomBytes(24).toString('base64url');
    this.server = createServer((req, res) => {
      if ((req.url ?? '').startsWith('/healthz')) {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}\n');
        return;
      }
      serveStatic(opts.rendererDir, req, res);
    });
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: BRIDGE_MAX_MESSAGE_BYTES,
      handleProtocols: (protocols) => (protocols.has(BRIDGE_SUBPROTOCOL) ? BRIDGE_SUBPROTOCOL : false),
    });
    this.server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
  }

  /** Binds and resolves with the page URL (token in the fragment). */
  async listen(): Promise<string> {
    const host = this.opts.host ?? '127.0.0.1';
    const bind = (port: number): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException): void => reject(err);
        this.server.once('error', onError);
        this.server.listen(port, host, () => {
          this.server.off('error', onError);
          resolve();
        });
      });
    try {
      await bind(this.opts.port ?? 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
      if (!this.opts.fallbackToAnyPort) throw new Error(`port ${this.opts.port} is in use: pick another with --port, or 0 for any free port`);
      // Another console holds the usual port; this one's saved chats live under its own port.
      await bind(0);
      this.movedFromPort = this.opts.port ?? 0;
    }
    const { port } = this.server.address() as AddressInfo;
    const h = host === '::1' ? '[::1]' : host;
    this.origin = `http://${h}:${port}`;
    return `${this.origin}/#token=${this.token}`;
  }

  /** Base URL without the token. */
  get baseUrl(): string {
    return this.origin;
  }

  private reject(socket: Duplex, status: number, reason: string): void {
    socket.end(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${reason}\n`);
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (!(req.url ?? '').startsWith('/bridge')) return this.reject(socket, 403, 'unknown endpoint');
    const origin = req.headers['origin'];
    const port = this.origin.split(':').pop();
    const allowed = [this.origin, `http://localhost:${port}`, `http://127.0.0.1:${port}`];
    if (typeof origin === 'string' && !allowed.includes(origin)) {
      return this.reject(socket, 403, `origin ${origin} may not use the console bridge`);
    }
    const protocols = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((s) => s.trim());
    const presented = protocols.find((p) => p.startsWith(BRIDGE_TOKEN_PREFIX))?.slice(BRIDGE_TOKEN_PREFIX.length);
    if (!presented || !sameToken(this.token, presented)) {
      return this.reject(socket, 401, 'missing or wrong console token: open the URL the console printed (it carries #token=...)');
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onClient(ws));
  }

  private onClient(ws: WebSocket): void {
    const send = (msg: BridgeWireMessage): void => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
    };
    const unsubscribe = this.opts.service.subscribe((channel, payload) => {
      // Metrics are superseded 100 ms later; a slow client drops them instead of queueing.
      if (channel === 'metrics.snapshot' && ws.bufferedAmount > SLOW_CLIENT_BYTES) return;
      send({ kind: 'push', channel, payload });
    });
    ws.on('close', unsubscribe);
    ws.on('error', unsubscribe);
    ws.on('message', (data) => {
      const text = data.toString('utf8');
      const decoded = decodeBridgeWireMessage(text);
      const refuse = (error: string): void => {
        // Answer the call when its id is readable; otherwise the peer is not our renderer.
        const id = callIdOf(text);
        if (id) send({ kind: 'result', id, ok: false, error });
        else ws.close(1008, error.slice(0, 120));
      };
      if (!decoded.ok) return refuse(decoded.error);
      const msg = decoded.value;
      if (msg.kind !== 'invoke') return refuse(`a client may only send invoke messages, not ${msg.kind}`);
      this.opts.service.invoke(msg.channel, msg.payload).then(
        (payload) => send({ kind: 'result', id: msg.id, ok: true, payload }),
        (err: unknown) => send({ kind: 'result', id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err) }),
      );
    });
  }

  async close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
