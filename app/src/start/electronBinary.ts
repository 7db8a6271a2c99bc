/**
 * Finds a usable Electron binary for `npm start`, or says why there is none so the
 * launcher can fall back to browser mode: the npm package downloads its binary on first
 * run (impossible offline), and a Linux session needs a display.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';

export type ElectronLookup = { ok: true; path: string } | { ok: false; reason: string };

export function findElectron(env: NodeJS.ProcessEnv = process.env, fromFile: string = __filename): ElectronLookup {
  if (process.platform === 'linux' && !env['DISPLAY'] && !env['WAYLAND_DISPLAY']) {
    return { ok: false, reason: 'no display (DISPLAY and WAYLAND_DISPLAY are unset)' };
  }
  let path: unknown;
  try {
    // The electron package's main export is the path of its binary; it throws when missing.
    path = createRequire(fromFile)('electron');
  } catch (e) {
    return { ok: false, reason: `the Electron binary is not installed (${(e as Error).message.split('\n')[0]})` };
  }
  if (typeof path !== 'string' || !existsSync(path)) return { ok: false, reason: `the Electron binary is missing (${String(path)})` };
  return { ok: true, path };
}
