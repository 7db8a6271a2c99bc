/**
 * Every environment variable the console's own processes read (start, Electron main,
 * packaging), in one place; the agent's are agent/src/util/env.ts (AFD_API_KEY among them).
 * Functions take the environment as a parameter (process.env by default) so tests pass
 * their own.
 */

export interface ConsoleEnv {
  /** AFD_CONSOLE_ARGS: the start command's arguments, passed to Electron's main process as JSON. */
  consoleArgs: string | undefined;
  /** DISPLAY or WAYLAND_DISPLAY is set: a window can open (Linux). */
  hasDisplay: boolean;
  /** ELECTRON_MIRROR: where Electron and electron-builder download from (default github.com). */
  electronMirror: string | undefined;
  /** ELECTRON_OVERRIDE_DIST_PATH: an Electron binary folder to use instead of node_modules/electron/dist. */
  electronDistOverride: string | undefined;
  /** XDG_CACHE_HOME, ELECTRON_CACHE, ELECTRON_BUILDER_CACHE: the download caches of packaging. */
  cacheHome: string | undefined;
  electronCache: string | undefined;
  electronBuilderCache: string | undefined;
}

function value(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

export function consoleEnv(env: NodeJS.ProcessEnv = process.env): ConsoleEnv {
  return {
    consoleArgs: value(env, 'AFD_CONSOLE_ARGS'),
    hasDisplay: value(env, 'DISPLAY') !== undefined || value(env, 'WAYLAND_DISPLAY') !== undefined,
    electronMirror: value(env, 'ELECTRON_MIRROR'),
    electronDistOverride: value(env, 'ELECTRON_OVERRIDE_DIST_PATH'),
    cacheHome: value(env, 'XDG_CACHE_HOME'),
    electronCache: value(env, 'ELECTRON_CACHE'),
    electronBuilderCache: value(env, 'ELECTRON_BUILDER_CACHE'),
  };
}
