import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerMakeModel } from './makeModel.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'afd-cli-make-model-'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await rm(root, { recursive: true, force: true });
});

async function run(...args: string[]): Promise<string> {
  const program = new Command('afd-agent').exitOverride();
  registerMakeModel(program);
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(['node', 'afd-agent', 'make-model', ...args]);
  } finally {
    vi.restoreAllMocks();
  }
  return out;
}

describe('afd-agent make-model', () => {
  it('lists presets', async () => {
    const out = await run('--list');
    expect(out).toMatch(/qwen3_moe\s+tiny\s+CPU default/);
    expect(out).toMatch(/qwen3_moe\s+qwen3-30b-a3b\s+\[config only\]/);
  });

  it('writes a model and reports files and per-role bytes', async () => {
    const out = await run('--arch', 'qwen3_moe', '--preset', 'qwen3-30b-a3b', '--out', join(root, 'm'), '--config-only', '--seed', '5');
    expect(out).toContain(`wrote qwen3_moe/qwen3-30b-a3b to ${join(root, 'm')}`);
    expect(JSON.parse(await readFile(join(root, 'm', 'afd-model.json'), 'utf8'))).toMatchObject({ seed: 5, configOnly: true });
  });

  it('explains missing and bad flags', async () => {
    await expect(run('--arch', 'qwen3_moe')).rejects.toThrow(/needs --arch and --out/);
    await expect(run('--arch', 'qwen3_moe', '--out', join(root, 'x'), '--seed', 'abc')).rejects.toThrow(/--seed must be an integer >= 0, got "abc"/);
  });
});
