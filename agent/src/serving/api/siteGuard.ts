/**
 * Cross-site defences of the HTTP API, the same at the front router and at every rank's
 * own port. A web page can make a browser send requests to a server on the user's
 * loopback; two checks keep it from starting or reading work there:
 *
 * - DNS rebinding: a page on attacker.example whose name is re-pointed at 127.0.0.1 talks
 *   to the server as its own origin and reads the answers; its requests still carry
 *   `Host: attacker.example`. On a loopback bind every request whose Host is not a
 *   loopback name or address (localhost, *.localhost, 127.0.0.0/8, [::1]; any port) is
 *   refused. On any other bind, Host is not checked (the router then needs an API key).
 * - Blind cross-site requests: a request whose Origin is neither allowed (the CORS
 *   --allowed-origins, "*" = any) nor the server's own (its Host) is refused before it is
 *   routed, so it never runs (CORS alone only hides the answer). Clients that are not
 *   browsers send no Origin and are not affected.
 *
 * Both refusals are 403 with an OpenAI-style error body. The third defence, JSON bodies
 * only (a text/plain POST needs no CORS preflight), is requireJsonContentType in httpUtil.
 */
import type { IncomingMessage } from 'node:http';
import { isLoopbackHost } from '../../daemon/bindPolicy.js';
import { ApiError } from './ApiError.js';

/** The host name of a Host header ("[::1]:8000" -> "::1", "Localhost.:80" -> "localhost"). */
export function hostNameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(h);
  const name = bracketed ? bracketed[1]! : h.split(':').length === 2 ? h.split(':')[0]! : h; // several colons: a bare IPv6 address
  return name.replace(/\.$/, '');
}

/** Whether a Host header names this machine's loopback (the names a rebinding page cannot take). */
export function isLoopbackHostHeader(hostHeader: string): boolean {
  const name = hostNameOf(hostHeader);
  return isLoopbackHost(name) || name.endsWith('.localhost');
}

/** The host[:port] of an origin ("http://Example.com:80" -> "example.com"); null when it is not a URL ("null"). */
function originHost(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

export interface SiteGuardOptions {
  /** The address the server is bound to: on loopback the Host header must name loopback too. */
  bindHost: string;
  /** Whether CORS allows this origin (--allowed-origins). */
  allowsOrigin: (origin: string) => boolean;
  /** The option that allows origins, for the message (default --allowed-origins). */
  originsOption?: string;
}

export class SiteGuard {
  private readonly loopbackBind: boolean;

  constructor(private readonly opts: SiteGuardOptions) {
    this.loopbackBind = isLoopbackHost(opts.bindHost);
  }

  /** Throws 403 on a loopback bind when the request's Host names another host (no Host, as HTTP/1.0 allows: nothing to check). */
  checkHost(req: IncomingMessage): void {
    const host = req.headers.host;
    if (!this.loopbackBind || host === undefined || isLoopbackHostHeader(host)) return;
    throw new ApiError(
      403,
      'invalid_request_error',
      `Host "${host}" is not a loopback name: this server listens on loopback (${this.opts.bindHost}) and answers only requests addressed to localhost, 127.0.0.1 or [::1], so a web page cannot reach it by re-pointing its own domain at this machine (DNS rebinding); address it as http://127.0.0.1:<port>, or bind a non-loopback address to serve other names`,
      'forbidden_host',
    );
  }

  /** Throws 403 when the request carries an Origin that is neither allowed nor the server's own. */
  checkOrigin(req: IncomingMessage): void {
    const origin = req.headers.origin;
    if (origin === undefined || this.opts.allowsOrigin(origin)) return;
    const host = req.headers.host?.toLowerCase();
    if (host !== undefined && originHost(origin) === host) return; // same origin: a page this server itself serves
    const option = this.opts.originsOption ?? '--allowed-origins';
    throw new ApiError(
      403,
      'invalid_request_error',
      `Origin "${origin}" is not allowed: a web page of another site may not send requests to this API (cross-site request forgery); start the server with ${option} '${JSON.stringify([origin])}' to allow it (clients that are not browsers send no Origin)`,
      'forbidden_origin',
    );
  }
}
