/**
 * `npm run package -w @afd/app`: checks electron-builder.yml (repository root) and its inputs, writes the
 * icon, makes sure the Electron zip and the AppImage/fpm tools are cached or downloadable
 * (failing fast with what is missing otherwise), then runs electron-builder for Linux.
 * Bundled and started by app/scripts/package.mjs.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { builderConfigPath, configProblems, loadBuilderConfig, missingInputs, packagingInputs } from './builderConfig.js';
import { cacheDirs, canReach, linuxDownloads } from './downloads.js';
import { consoleIcon } from './icon.js';
import { consoleEnv } from '../start/consoleEnv.js';

function fail(message: string, code = 1): never {
  console.error(`package: ${message}`);
  process.exit(code);
}

export async function runPackaging(appDir: string, extraArgs: readonly string[] = []): Promise<void> {
  const configPath = builderConfigPath(appDir);
  const config = loadBuilderConfig(configPath);
  const main = (JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')) as { main: string }).main;
  const problems = configProblems(config, main);
  if (problems.length) fail(`${configPath}: ${problems.join('; ')}`);
  const missing = missingInputs(packagingInputs(config, appDir, main));
  if (missing.length) fail(`missing build outputs: ${missing.join(', ')}. Run \`npm run build\` at the repository root first.`);

  if (config.linux.icon) {
    const iconPath = resolve(appDir, config.linux.icon);
    mkdirSync(dirname(iconPath), { recursive: true });
    writeFileSync(iconPath, consoleIcon(512));
  }

  const require = createRequire(join(appDir, 'package.json'));
  const electronVersion = (require('electron/package.json') as { version: string }).version;
  const needs = linuxDownloads(electronVersion);
  const uncached = needs.filter((n) => !n.cachedAt);
  if (uncached.length > 0) {
    const electronMirror = consoleEnv().electronMirror;
    const mirror = electronMirror ? new URL(electronMirror).hostname : 'github.com';
    if (!(await canReach(mirror))) {
      const dirs = cacheDirs();
      fail(
        `cannot package offline: electron-builder must download ${uncached.map((n) => n.what).join(', ')}, ` +
          `and ${mirror}:443 is unreachable. Run this where ${mirror} is reachable, or fill the caches first ` +
          `(${dirs.electron} for the Electron zip, ${dirs.builder} for the tools; ELECTRON_CACHE / ELECTRON_BUILDER_CACHE move them).`,
        2,
      );
    }
  }

  const cli = require.resolve('electron-builder/cli.js');
  // app/ is electron-builder's project directory: the config's paths are relative to it.
  const args = ['--linux', '--config', relative(appDir, configPath), '--publish', 'never', ...extraArgs];
  console.log(`package: electron-builder ${args.join(' ')} (Electron ${electronVersion})`);
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: appDir, stdio: 'inherit' });
  if (r.status !== 0) fail(`electron-builder failed (exit ${r.status ?? r.signal})`, r.status ?? 1);
  console.log(`package: done: ${resolve(appDir, config.directories.output)}`);
}
