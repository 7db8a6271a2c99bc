/**
 * The OpenAI API's bearer key check, shared by the ranks and the front router: the key
 * is compared as a SHA-256 digest in constant time (digests hide its length too).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ApiError } from './ApiError.js';

/** Paths served without the API key: probes and monitoring (/afd/stats carries what /metrics does). */
export const OPEN_PATHS: ReadonlySet<string> = new Set(['/health', '/metrics', '/version', '/afd/stats']);

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export class BearerAuth {
  private readonly digest: Buffer | null;

  /** `apiKey` undefined or empty = no key: everything is open. */
  constructor(apiKey: string | undefined) {
    this.digest = apiKey ? sha256(apiKey) : null;
  }

  get required(): boolean {
    return this.digest !== null;
  }

  authorized(req: IncomingMessage): boolean {
    if (!this.digest) return true;
    const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
    return timingSafeEqual(sha256(m?.[1] ?? ''), this.digest) && m !== null;
  }

  /** Throws 401 unless `path` is open or the request carries the key. */
  check(path: string, req: IncomingMessage): void {
    if (OPEN_PATHS.has(path) || this.authorized(req)) return;
    throw new ApiError(401, 'invalid_request_error', 'missing or invalid API key: send "Authorization: Bearer <key>"', 'invalid_api_key');
  }
}
