/**
 * CORS with the semantics of vLLM's --allowed-origins, --allowed-methods, --allowed-headers
 * and --allow-credentials (vLLM hands them to Starlette's CORSMiddleware), for the rank's
 * HTTP server and the front router:
 *
 * - a request without an Origin header is left alone;
 * - a preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here,
 *   before authentication and routing: 200 "OK", or 400 "Disallowed CORS origin, method,
 *   headers" naming what is not allowed; with no origin allowed (the default) every
 *   preflight gets that 400, as vLLM's with `--allowed-origins '[]'`;
 * - any other response to an allowed origin carries Access-Control-Allow-Origin: "*" when
 *   every origin is allowed (the request's own origin, with Vary: Origin, when it carries a
 *   cookie), else the request's origin with Vary: Origin; Access-Control-Allow-Credentials:
 *   true whenever credentials are allowed.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CorsConfig } from '@afd/shared';

/** What "*" in the allowed methods stands for. */
const ALL_METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];
/** Request headers a preflight may always ask for (the CORS-safelisted ones). */
const SAFELISTED_HEADERS = ['Accept', 'Accept-Language', 'Content-Language', 'Content-Type'];
/** Seconds a browser may cache a preflight answer. */
const MAX_AGE_S = 600;

/** Adds `value` to a response's Vary header. */
function addVary(res: ServerResponse, value: string): void {
  const prev = res.getHeader('vary');
  res.setHeader('vary', prev ? `${String(prev)}, ${value}` : value);
}

export class Cors {
  private readonly anyOrigin: boolean;
  private readonly anyHeader: boolean;
  private readonly origins: ReadonlySet<string>;
  private readonly methods: readonly string[];
  /** Allowed request headers, lowercased (safelisted ones included). */
  private readonly headers: ReadonlySet<string>;
  /** Headers of every preflight answer (the origin is added per request). */
  private readonly preflightHeaders: Record<string, string>;

  constructor(private readonly config: CorsConfig) {
    this.anyOrigin = config.allowedOrigins.includes('*');
    this.anyHeader = config.allowedHeaders.includes('*');
    this.origins = new Set(config.allowedOrigins);
    this.methods = config.allowedMethods.includes('*') ? ALL_METHODS : config.allowedMethods;
    const headers = [...new Set([...SAFELISTED_HEADERS, ...config.allowedHeaders])].sort();
    this.headers = new Set(headers.map((h) => h.toLowerCase()));
    const explicitOrigin = !this.anyOrigin || config.allowCredentials;
    this.preflightHeaders = {
      ...(explicitOrigin ? { vary: 'Origin' } : { 'access-control-allow-origin': '*' }),
      'access-control-allow-methods': this.methods.join(', '),
      'access-control-max-age': String(MAX_AGE_S),
      ...(this.anyHeader ? {} : { 'access-control-allow-headers': headers.join(', ') }),
      ...(config.allowCredentials ? { 'access-control-allow-credentials': 'true' } : {}),
    };
  }

  /** Whether --allowed-origins allows this origin ("*": any). */
  allowsOrigin(origin: string): boolean {
    return this.anyOrigin || this.origins.has(origin);
  }

  /** Answers a CORS preflight and returns true; false (nothing sent) for any other request. */
  preflight(req: IncomingMessage, res: ServerResponse): boolean {
    const origin = req.headers.origin;
    const method = req.headers['access-control-request-method'];
    if (req.method !== 'OPTIONS' || origin === undefined || method === undefined) return false;
    const headers: Record<string, string> = { ...this.preflightHeaders };
    const failures: string[] = [];
    if (!this.allowsOrigin(origin)) failures.push('origin');
    else if (!this.anyOrigin || this.config.allowCredentials) headers['access-control-allow-origin'] = origin;
    if (!this.methods.includes(method)) failures.push('method');
    const asked = req.headers['access-control-request-headers'];
    if (asked !== undefined && this.anyHeader) headers['access-control-allow-headers'] = asked;
    else if (asked !== undefined && asked.split(',').some((h) => !this.headers.has(h.trim().toLowerCase()))) failures.push('headers');
    const body = failures.length > 0 ? `Disallowed CORS ${failures.join(', ')}` : 'OK';
    res.writeHead(failures.length > 0 ? 400 : 200, { ...headers, 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    return true;
  }

  /** Sets the CORS headers of an actual (non-preflight) response; call before anything is written. */
  decorate(req: IncomingMessage, res: ServerResponse): void {
    const origin = req.headers.origin;
    if (origin === undefined) return;
    if (this.config.allowCredentials) res.setHeader('access-control-allow-credentials', 'true');
    if (this.anyOrigin && req.headers.cookie === undefined) res.setHeader('access-control-allow-origin', '*');
    else if (this.allowsOrigin(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      addVary(res, 'Origin');
    }
  }
}
