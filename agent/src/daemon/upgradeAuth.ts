/**
 * The checks made on the HTTP upgrade request, before any WebSocket exists: the token
 * (Authorization: Bearer; for clients that cannot set headers, the `?token=` query
 * parameter or the subprotocol `afd.token.<token>` offered next to `afd.v1`) and the Origin header (absent for non-browser clients; else it must be one of
 * the configured origins, e.g. the console's).
 */
import type { IncomingMessage } from 'node:http';
import { AGENT_TOKEN_QUERY_PARAM } from '@afd/shared';
import { tokensEqual } from './tokenFile.js';

/** The subprotocol the agent speaks; a browser client offers it with its token protocol. */
export const agentSubprotocol = 'afd.v1';
/** Prefix of the subprotocol that carries the token for clients that cannot set headers. */
export const tokenSubprotocolPrefix = 'afd.token.';

export interface UpgradePolicy {
  token: string;
  /** Origins allowed for browser clients, e.g. "http://127.0.0.1:5173". */
  allowedOrigins: readonly string[];
}

export type UpgradeVerdict = { ok: true } | { ok: false; status: 401 | 403; reason: string };

/** Extracts the presented token, or undefined when none was presented. */
export function presentedToken(req: Pick<IncomingMessage, 'headers'> & { url?: string }): string | undefined {
  const auth = req.headers['authorization'];
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1];
  }
  if (req.url) {
    const fromQuery = new URL(req.url, 'http://agent').searchParams.get(AGENT_TOKEN_QUERY_PARAM);
    if (fromQuery) return fromQuery;
  }
  const protocols = req.headers['sec-websocket-protocol'];
  if (typeof protocols === 'string') {
    for (const p of protocols.split(',').map((s) => s.trim())) {
      if (p.startsWith(tokenSubprotocolPrefix)) return p.slice(tokenSubprotocolPrefix.length);
    }
  }
  return undefined;
}

/** Normalises an origin for comparison (lower case, no trailing slash). */
function normOrigin(origin: string): string {
  return origin.trim().toLowerCase().replace(/\/+$/, '');
}

export function checkUpgrade(req: Pick<IncomingMessage, 'headers'> & { url?: string }, policy: UpgradePolicy): UpgradeVerdict {
  const origin = req.headers['origin'];
  if (typeof origin === 'string' && origin !== '') {
    const allowed = policy.allowedOrigins.map(normOrigin);
    if (!allowed.includes(normOrigin(origin))) {
      return { ok: false, status: 403, reason: `origin ${origin} is not allowed; start the agent with --allow-origin ${origin} to permit it` };
    }
  }
  const token = presentedToken(req);
  if (token === undefined) {
    return { ok: false, status: 401, reason: 'missing agent token: send "Authorization: Bearer <token>" (the token is in the agent token file)' };
  }
  if (!tokensEqual(policy.token, token)) {
    return { ok: false, status: 401, reason: 'wrong agent token: use the token from the agent token file ($AFD_HOME/agent-token by default)' };
  }
  return { ok: true };
}
