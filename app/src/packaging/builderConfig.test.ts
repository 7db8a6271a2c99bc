import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { builderConfigPath, configProblems, filesInclude, linuxTargets, loadBuilderConfig, missingInputs, packagingInputs } from './builderConfig.js';

const APP = fileURLToPath(new URL('../../', import.meta.url));
const CONFIG = builderConfigPath(APP);
const MAIN = (JSON.parse(readFileSync(join(APP, 'package.json'), 'utf8')) as { main: string }).main;

describe('electron-builder.yml', () => {
  const c = loadBuilderConfig(CONFIG);

  it('sits at the repository root', () => {
    expect(CONFIG).toBe(join(APP, '..', 'electron-builder.yml'));
    expect(existsSync(CONFIG)).toBe(true);
    expect(existsSync(join(APP, 'electron-builder.yml'))).toBe(false);
  });

  it('builds AppImage and deb for Linux with an id, a name, a category and an icon', () => {
    expect(linuxTargets(c)).toEqual(expect.arrayContaining(['AppImage', 'deb']));
    expect(c.appId).toBe('dev.afd.console');
    expect(c.productName).toBe('AFD Console');
    expect(c.linux.category).toBe('Development');
    expect(c.linux.icon).toMatch(/\.png$/);
  });

  it('ships the main entry of app/package.json and no source maps or node_modules', () => {
    expect(MAIN).toBe('dist/main/main.cjs');
    expect(filesInclude(c, MAIN)).toBe(true);
    expect(filesInclude(c, 'dist/preload/preload.cjs')).toBe(true);
    expect(filesInclude(c, 'dist/renderer/index.html')).toBe(true);
    expect(filesInclude(c, 'dist/main/main.cjs.map')).toBe(false);
    expect(filesInclude(c, 'node_modules/react/index.js')).toBe(false);
    expect(filesInclude(c, 'src/main/main.ts')).toBe(false);
  });

  it('keeps the native addon out of the asar archive, beside the agent bundle', () => {
    expect(configProblems(c, MAIN)).toEqual([]);
    expect(c.extraResources).toEqual(
      expect.arrayContaining([
        { from: '../agent/dist/afd-agent.cjs', to: 'agent/afd-agent.cjs' },
        { from: '../native/build/Release/afd_native.node', to: 'agent/afd_native.node' },
      ]),
    );
    expect(c.asarUnpack).toContain('**/*.node');
    expect(filesInclude(c, 'dist/afd_native.node')).toBe(true); // would be unpacked by asarUnpack
  });

  // The inputs exist once `npm run build` ran (CI builds before the e2e suite, not before vitest).
  it.skipIf(!existsSync(join(APP, MAIN)))('finds every input after `npm run build`', () => {
    const inputs = packagingInputs(c, APP, MAIN);
    expect(inputs).toHaveLength(5);
    expect(missingInputs(inputs)).toEqual([]);
  });
});

describe('configProblems', () => {
  const base = parse(readFileSync(CONFIG, 'utf8')) as Record<string, unknown>;
  const load = (patch: (c: Record<string, unknown>) => void) => {
    const copy = structuredClone(base);
    patch(copy);
    const dir = mkdtempSync(join(tmpdir(), 'afd-builder-'));
    writeFileSync(join(dir, 'electron-builder.yml'), stringify(copy));
    return loadBuilderConfig(join(dir, 'electron-builder.yml'));
  };

  it('names each broken rule', () => {
    const c = load((x) => {
      (x['linux'] as { target: string[] }).target = ['AppImage'];
      x['files'] = ['src/**', '../native/build/Release/afd_native.node'];
      x['extraResources'] = [{ from: '../agent/dist/afd-agent.cjs', to: 'bin/afd-agent.cjs' }];
      x['asarUnpack'] = [];
    });
    const p = configProblems(c, MAIN);
    expect(p).toContain('linux.target lacks deb');
    expect(p).toContain('files do not take the main entry dist/main/main.cjs (app/package.json "main")');
    expect(p).toContain('files put a native addon inside the asar archive: ship it as an extraResource');
    expect(p).toContain('no extraResource ships the native addon (afd_native.node)');
    expect(p.some((s) => s.startsWith('the agent bundle must land at resources/agent/afd-agent.cjs'))).toBe(true);
    expect(p).toContain('asarUnpack should keep **/*.node out of the archive');
  });

  it('rejects a file that is not a config, naming the field', () => {
    expect(() => load((x) => delete x['appId'])).toThrow(/appId/);
    const dir = mkdtempSync(join(tmpdir(), 'afd-builder-'));
    writeFileSync(join(dir, 'bad.yml'), 'appId: [unclosed');
    expect(() => loadBuilderConfig(join(dir, 'bad.yml'))).toThrow(/cannot read .*bad\.yml/);
  });
});
