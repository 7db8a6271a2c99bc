/**
 * Finds a usable Electron binary for `npm start`, or says why there is none so the
 * launcher can fall back to browser mode. The electron npm package downloads its binary
 * on first `require` (impossible offline, and slow to fail), so this reads the package's
 * path.txt instead of requiring it; a Linux session also needs a display.
 */
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { consoleEnv } from './consoleEnv.js';

export type ElectronLookup = { ok: true; path: string } | { ok: false; reason: string };

/** Where the binary is, without downloading anything. */
export function electronBinaryPath(env: NodeJS.ProcessEnv = process.env, fromFile: string = __filename): ElectronLookup {
  let pkgDir: string;
  try {
    pkgDir = dirname(createRequire(fromFile).resolve('electron/package.json'));
  } catch {
    return { ok: false, reason: 'the electron package is not installed (npm install)' };
  }
  const pathFile = join(pkgDir, 'path.txt');
  const rel = existsSync(pathFile) ? readFileSync(pathFile, 'utf8').trim() : '';
  const override = consoleEnv(env).electronDistOverride;
  if (override) {
    const p = join(override, rel || 'electron');
    return existsSync(p) ? { ok: true, path: p } : { ok: false, reason: `ELECTRON_OVERRIDE_DIST_PATH has no Electron binary (${p})` };
  }
  if (!rel) return { ok: false, reason: 'the Electron binary was never downloaded (it is fetched on first use; this machine may be offline)' };
  const p = join(pkgDir, 'dist', rel);
  return existsSync(p) ? { ok: true, path: p } : { ok: false, reason: `the Electron binary is missing (${p})` };
}

/** A binary that can show a window here. */
export function findElectron(env: NodeJS.ProcessEnv = process.env, fromFile: string = __filename): ElectronLookup {
  const bin = electronBinaryPath(env, fromFile);
  if (!bin.ok) return bin;
  if (process.platform === 'linux' && !consoleEnv(env).hasDisplay) {
    return { ok: false, reason: 'no display (DISPLAY and WAYLAND_DISPLAY are unset)' };
  }
  return bin;
}
