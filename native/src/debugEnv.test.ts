/**
 * The debugging overrides of the environment (core/debug-env.h), each in a child process
 * since they are read once per process: a malformed value fails the first backend the
 * addon makes with an error naming the variable, and a value set after that first read
 * is not seen.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testingAddonCandidates } from './testing/testingAddon.js';

// runOp makes a backend: the testing addon has it.
const addonPath = testingAddonCandidates().find((p) => existsSync(p));

/** Runs `body` (CommonJS, `addon` and `add()` in scope) in a child with `env` added; returns its stdout or its error. */
function child(env: Record<string, string>, body: string): { out: string; err: string } {
  const script = `
    const addon = require(${JSON.stringify(addonPath)});
    const t = () => ({ dtype: 'f32', shape: [2], data: new Float32Array([1, 2]) });
    const add = () => Array.from(addon.runOp({ name: 'cpu', threads: 1 }, 'add', { a: t(), b: t() }).out);
    try { ${body} } catch (e) { process.stdout.write('threw: ' + e.message); }`;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { out: run.stdout, err: run.stderr };
}

describe('debugging overrides (AFD_* environment)', () => {
  it('refuses a malformed value, naming the variable', () => {
    expect(child({ AFD_CUDA_ATTENTION: 'mma' }, 'add()').out).toBe('threw: AFD_CUDA_ATTENTION must be simt, tc or auto (got "mma")');
    expect(child({ AFD_ATTENTION_BLOCKS_PER_SM: '17' }, 'add()').out).toBe('threw: AFD_ATTENTION_BLOCKS_PER_SM must be an integer in [1, 16] (got "17")');
    expect(child({ AFD_EXPERT_GEMM_MIN_TOKENS: '12x' }, 'add()').out).toMatch(/^threw: AFD_EXPERT_GEMM_MIN_TOKENS must be an integer in \[1, /);
    expect(child({ AFD_GDN_KERNEL: 'column' }, 'add()').out).toBe('threw: AFD_GDN_KERNEL must be warps or columns (got "column")');
    expect(child({ AFD_FAULT_FFN_LAYER_DELAY_US: '-1' }, 'add()').out).toMatch(/^threw: AFD_FAULT_FFN_LAYER_DELAY_US must be an integer in \[0, 10000000\]/);
  });

  it('reads the environment once: a value set after the first backend is not seen', () => {
    const r = child({}, `add(); process.env.AFD_EXPERT_GEMM = 'bad'; process.stdout.write(JSON.stringify(add()));`);
    expect(r.out).toBe('[2,4]');
    expect(child({ AFD_EXPERT_GEMM: 'cublas', AFD_CUDA_PDL: '0', AFD_ENGINE_GRAPHS: 'off', AFD_GDN_KERNEL: 'warps' }, 'process.stdout.write(JSON.stringify(add()))').out).toBe('[2,4]');
  });
});
