/**
 * The agent's shared secret. Generated on first run into a file only the owner can read
 * (mode 0600) and read from there afterwards. The token is never printed in full and never
 * passed on a command line (where `ps` would show it); clients read the same file or get
 * it from a Secret (Kubernetes) or the console's settings.
 */
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afdHome } from '../util/afdHome.js';

/** Default token file: $AFD_HOME/agent-token. */
export function defaultTokenFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(afdHome(env), 'agent-token');
}

/** Shortest token accepted from a file someone wrote by hand. */
export const minTokenLength = 16;

export interface LoadedToken {
  token: string;
  /** True when this call generated the file. */
  created: boolean;
  path: string;
}

/** Creates the token file; false when another process created it first. */
function createTokenFile(path: string): boolean {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // 'wx' fails if the file exists, so two agents starting at once cannot overwrite each other.
    writeFileSync(path, `${randomBytes(32).toString('base64url')}\n`, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new Error(`cannot create the agent token file ${path}: ${(e as Error).message}. Check that its folder is writable or pass --token-file`);
  }
}

/**
 * Reads the token from `path`, creating it (256 random bits, base64url) when missing.
 * Refuses a file that group or others can read, or one that holds a too-short token.
 */
export function loadOrCreateToken(path: string): LoadedToken {
  // An existing file (e.g. a read-only Kubernetes Secret mount) is only read, never written.
  const created = existsSync(path) ? false : createTokenFile(path);
  if (created) chmodSync(path, 0o600); // the umask may have narrowed it further; never wider
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new Error(
      `agent token file ${path} is readable by other users (mode ${mode.toString(8)}). ` + `Run \`chmod 600 ${path}\` and start again`,
    );
  }
  const token = readFileSync(path, 'utf8').trim();
  if (token.length < minTokenLength || /\s/.test(token)) {
    throw new Error(
      `agent token file ${path} must hold one token of at least ${minTokenLength} characters without spaces. ` +
        'Delete the file to have a new one generated',
    );
  }
  return { token, created, path };
}

/** A form safe for logs: the first 4 characters and a fingerprint, never the token. */
export function maskToken(token: string): string {
  const fingerprint = createHash('sha256').update(token).digest('hex').slice(0, 8);
  return `${token.slice(0, 4)}… (sha256 ${fingerprint})`;
}

/** Constant-time comparison (a wrong token must not leak its matching prefix length). */
export function tokensEqual(expected: string, presented: string): boolean {
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(presented).digest();
  return timingSafeEqual(a, b);
}
