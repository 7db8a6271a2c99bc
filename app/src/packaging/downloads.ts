/**
 * What electron-builder will download for a Linux package, and whether it can: the
 * Electron release zip (via @electron/get, cached under ELECTRON_CACHE or ~/.cache/electron)
 * and its AppImage and fpm tools (cached under ELECTRON_BUILDER_CACHE or
 * ~/.cache/electron-builder). Packaging fails fast, with this list, when neither a cache
 * nor the network can supply them.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { consoleEnv } from '../start/consoleEnv.js';

export interface DownloadNeed {
  what: string;
  /** Where a cached copy was found, or null. */
  cachedAt: string | null;
}

/** Cache folders, from the environment electron-builder and @electron/get honour. */
export function cacheDirs(env: NodeJS.ProcessEnv = process.env): { electron: string; builder: string } {
  const e = consoleEnv(env);
  const base = e.cacheHome ?? join(homedir(), '.cache');
  return { electron: e.electronCache ?? join(base, 'electron'), builder: e.electronBuilderCache ?? join(base, 'electron-builder') };
}

/** Finds a file by name under dir (a few levels deep: @electron/get nests by URL hash). */
function findFile(dir: string, name: string, depth = 3): string | null {
  if (!existsSync(dir)) return null;
  for (const entry of readdirSync(dir)) {
    const p = join(dir, entry);
    if (entry === name) return p;
    if (depth > 0 && statSync(p).isDirectory()) {
      const hit = findFile(p, name, depth - 1);
      if (hit) return hit;
    }
  }
  return null;
}

/** Finds a folder whose name starts with prefix under dir (electron-builder unpacks tools as <tool>-<version>/ or <tool>/<hash>/). */
function findDir(dir: string, prefix: string): string | null {
  if (!existsSync(dir)) return null;
  const hit = readdirSync(dir).find((e) => e.startsWith(prefix) && statSync(join(dir, e)).isDirectory());
  return hit ? join(dir, hit) : null;
}

/** The downloads a Linux AppImage + deb build needs, with any cached copies. */
export function linuxDownloads(electronVersion: string, dirs = cacheDirs(), arch = process.arch === 'arm64' ? 'arm64' : 'x64'): DownloadNeed[] {
  const zip = `electron-v${electronVersion}-linux-${arch}.zip`;
  return [
    { what: `Electron ${electronVersion} (${zip})`, cachedAt: findFile(dirs.electron, zip) },
    { what: 'AppImage tools (electron-builder-binaries appimage)', cachedAt: findDir(dirs.builder, 'appimage') },
    { what: 'fpm (electron-builder-binaries, builds the deb)', cachedAt: findDir(dirs.builder, 'fpm') },
  ];
}

/** Whether a TCP connection to host:port opens within timeoutMs. */
export function canReach(host: string, port = 443, timeoutMs = 5000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
