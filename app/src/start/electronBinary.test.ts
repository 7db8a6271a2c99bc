import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { electronBinaryPath, findElectron } from './electronBinary.js';

/** A fake node_modules/electron: path.txt and optionally the binary. */
function fakeInstall(withBinary: boolean, withPathTxt = true): string {
  const root = mkdtempSync(join(tmpdir(), 'afd-electron-'));
  const pkg = join(root, 'node_modules', 'electron');
  mkdirSync(join(pkg, 'dist'), { recursive: true });
  writeFileSync(join(pkg, 'package.json'), '{"name":"electron","version":"42.0.0"}');
  if (withPathTxt) writeFileSync(join(pkg, 'path.txt'), 'electron');
  if (withBinary) writeFileSync(join(pkg, 'dist', 'electron'), '');
  return join(root, 'main.js');
}

describe('electron lookup', () => {
  it('finds an installed binary without requiring the package', () => {
    const from = fakeInstall(true);
    expect(electronBinaryPath({}, from)).toMatchObject({ ok: true, path: expect.stringMatching(/dist\/electron$/) });
    expect(findElectron({ DISPLAY: ':0' }, from).ok).toBe(true);
  });
  it('explains why there is none', () => {
    expect(electronBinaryPath({}, fakeInstall(false, false))).toMatchObject({ ok: false, reason: expect.stringMatching(/never downloaded/) });
    expect(electronBinaryPath({}, fakeInstall(false))).toMatchObject({ ok: false, reason: expect.stringMatching(/missing/) });
    expect(electronBinaryPath({}, join(mkdtempSync(join(tmpdir(), 'afd-none-')), 'x.js'))).toMatchObject({ ok: false, reason: expect.stringMatching(/not installed/) });
    if (process.platform === 'linux') expect(findElectron({}, fakeInstall(true))).toMatchObject({ ok: false, reason: expect.stringMatching(/no display/) });
  });
});
