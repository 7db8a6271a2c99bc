import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheDirs, canReach, linuxDownloads } from './downloads.js';

describe('linuxDownloads', () => {
  it('lists the Electron zip and the AppImage / fpm tools, with cached copies', () => {
    const root = mkdtempSync(join(tmpdir(), 'afd-cache-'));
    const dirs = { electron: join(root, 'electron'), builder: join(root, 'electron-builder') };
    expect(linuxDownloads('42.1.0', dirs, 'x64').map((n) => n.cachedAt)).toEqual([null, null, null]);
    mkdirSync(join(dirs.electron, 'abc123'), { recursive: true });
    writeFileSync(join(dirs.electron, 'abc123', 'electron-v42.1.0-linux-x64.zip'), '');
    mkdirSync(join(dirs.builder, 'appimage', '12.0.1'), { recursive: true });
    mkdirSync(join(dirs.builder, 'fpm-1.9.3'), { recursive: true });
    const needs = linuxDownloads('42.1.0', dirs, 'x64');
    expect(needs[0]).toEqual({ what: 'Electron 42.1.0 (electron-v42.1.0-linux-x64.zip)', cachedAt: join(dirs.electron, 'abc123', 'electron-v42.1.0-linux-x64.zip') });
    expect(needs[1]!.cachedAt).toBe(join(dirs.builder, 'appimage'));
    expect(needs[2]!.cachedAt).toBe(join(dirs.builder, 'fpm-1.9.3'));
  });

  it('follows ELECTRON_CACHE, ELECTRON_BUILDER_CACHE and XDG_CACHE_HOME', () => {
    expect(cacheDirs({ ELECTRON_CACHE: '/e', ELECTRON_BUILDER_CACHE: '/b' })).toEqual({ electron: '/e', builder: '/b' });
    expect(cacheDirs({ XDG_CACHE_HOME: '/x' })).toEqual({ electron: '/x/electron', builder: '/x/electron-builder' });
  });
});

describe('canReach', () => {
  it('tells an open loopback port from a closed one', async () => {
    const server = createServer((s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      expect(await canReach('127.0.0.1', port, 2000)).toBe(true);
    } finally {
      await new Promise((r) => server.close(r));
    }
    expect(await canReach('127.0.0.1', port, 2000)).toBe(false);
  });
});
