import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultTokenFile, loadOrCreateToken, maskToken, tokensEqual } from './tokenFile.js';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'afd-token-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('agent token file', () => {
  it('creates a 0600 file with a long random token on first run, then reuses it', () => {
    const path = join(dir, 'nested', 'agent-token');
    const first = loadOrCreateToken(path);
    expect(first.created).toBe(true);
    expect(first.token.length).toBeGreaterThanOrEqual(40);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const second = loadOrCreateToken(path);
    expect(second).toEqual({ token: first.token, created: false, path });
    expect(readFileSync(path, 'utf8').trim()).toBe(first.token);
  });

  it('refuses a token file readable by others, naming the fix', () => {
    const path = join(dir, 'agent-token');
    writeFileSync(path, 'a'.repeat(32));
    chmodSync(path, 0o644);
    expect(() => loadOrCreateToken(path)).toThrow(/chmod 600/);
  });

  it('refuses a too-short token', () => {
    const path = join(dir, 'agent-token');
    writeFileSync(path, 'short\n', { mode: 0o600 });
    expect(() => loadOrCreateToken(path)).toThrow(/at least 16/);
  });

  it('masks tokens and compares them in constant time', () => {
    const token = 'abcdefghijklmnopqrstuvwxyz012345';
    expect(maskToken(token)).not.toContain('efgh');
    expect(maskToken(token)).toMatch(/^abcd… \(sha256 [0-9a-f]{8}\)$/);
    expect(tokensEqual(token, token)).toBe(true);
    expect(tokensEqual(token, `${token}x`)).toBe(false);
    expect(tokensEqual(token, '')).toBe(false);
  });

  it('defaults to $AFD_HOME/agent-token, else ~/.afd/agent-token', () => {
    expect(defaultTokenFile({ AFD_HOME: '/x/y' })).toBe('/x/y/agent-token');
    expect(defaultTokenFile({})).toMatch(/\/\.afd\/agent-token$/);
  });
});
