/**
 * The random tiny default model with racing processes: separate `ensureTinyModel` processes
 * (agent/src/testing/ensureTinyModelMain.ts, bundled) on one home folder, creating it
 * fresh, replacing an outdated copy, and past a lock left by a process that died.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildLoadSpec } from '@afd/native/checkpoint';
import { bundleProgram, repoRoot } from '../testing/agentBundle.js';
import { ensureTinyModel, tinyModelDir, tinyModelName } from './defaultModel.js';
import { makeModelVersion, markerFileName } from './makeModel.js';

interface Outcome {
  code: number | null;
  result: { dir: string; created: boolean } | null;
  stderr: string;
}

let script: string;
let home: string;
beforeAll(async () => {
  script = await bundleProgram('agent/src/testing/ensureTinyModelMain.ts', 'ensure-tiny-model.cjs');
}, 60_000);
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'afd-home-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

/** One ensureTinyModel process on `home`. */
function ensureInProcess(): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, home], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, result: code === 0 ? (JSON.parse(stdout) as Outcome['result']) : null, stderr }));
  });
}

/** Both processes succeed on the same folder, exactly one made the model, and it loads; no lock or temp folder is left. */
async function expectOneMaker(outcomes: Outcome[]): Promise<void> {
  for (const o of outcomes) expect(o.code, o.stderr).toBe(0);
  expect(outcomes.map((o) => o.result!.dir)).toEqual(outcomes.map(() => tinyModelDir(home)));
  expect(outcomes.filter((o) => o.result!.created)).toHaveLength(1);
  await buildLoadSpec(tinyModelDir(home), 'colocated');
  expect(await readdir(join(home, 'models'))).toEqual([tinyModelName]);
}

describe('the tiny default model with racing processes', () => {
  it('two processes on a fresh home: one makes it, the other uses it', async () => {
    await expectOneMaker(await Promise.all([ensureInProcess(), ensureInProcess()]));
  }, 300_000);

  it('two processes finding an outdated copy: one replaces it, the other uses the new one', async () => {
    const { dir } = await ensureTinyModel(home);
    const marker = join(dir, markerFileName);
    const current = await readFile(marker, 'utf8');
    await writeFile(marker, JSON.stringify({ ...JSON.parse(current), version: makeModelVersion - 1 }));
    await expectOneMaker(await Promise.all([ensureInProcess(), ensureInProcess()]));
    expect(await readFile(marker, 'utf8')).toBe(current);
  }, 300_000);

  it('a lock left by a process that died does not block', async () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    await mkdir(join(home, 'models'), { recursive: true });
    await writeFile(`${tinyModelDir(home)}.lock`, JSON.stringify({ pid: dead, host: hostname(), token: 'dead' }));
    const o = await ensureInProcess();
    expect(o.code, o.stderr).toBe(0);
    expect(o.result).toEqual({ dir: tinyModelDir(home), created: true });
    expect(existsSync(`${tinyModelDir(home)}.lock`)).toBe(false);
  }, 300_000);
});
