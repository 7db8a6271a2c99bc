/**
 * whenSupervisorGone in a real child process: closing the child's stdin (what happens
 * when the agent dies, even by SIGKILL) runs its stop hook, which exits 0; without
 * AFD_SUPERVISED=1 it is inactive.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

let dir = '';
let bundle = '';
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'afd-parentwatch-'));
  const entry = join(dir, 'entry.ts');
  writeFileSync(
    entry,
    `import { whenSupervisorGone } from ${JSON.stringify(join(import.meta.dirname, 'parentWatch.ts'))};
const active = whenSupervisorGone(() => { process.stdout.write('stop hook ran\\n', () => process.exit(0)); });
process.stdout.write(active ? 'watching\\n' : 'inactive\\n');
setInterval(() => {}, 1000);
if (!active) setTimeout(() => process.exit(7), 300);`,
  );
  bundle = join(dir, 'child.cjs');
  await build({ entryPoints: [entry], outfile: bundle, bundle: true, platform: 'node', format: 'cjs', logLevel: 'error' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the child, waits for its first line, closes its stdin, and returns its exit code and output. */
async function run(env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [bundle], { env: { PATH: process.env['PATH'], ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await new Promise((resolve) => child.stdout.once('data', resolve));
  child.stdin.end(); // what the agent's death does to the pipe
  const code = await exited;
  clearTimeout(timer);
  return { code, out };
}

describe('whenSupervisorGone', () => {
  it('runs the stop hook (which exits 0) when the supervisor pipe closes', async () => {
    const r = await run({ AFD_SUPERVISED: '1' });
    expect(r.out).toContain('watching');
    expect(r.out).toContain('stop hook ran');
    expect(r.code).toBe(0);
  });

  it('stays inactive without AFD_SUPERVISED=1', async () => {
    const r = await run({});
    expect(r.out).toContain('inactive');
    expect(r.out).not.toContain('stop hook ran');
    expect(r.code).toBe(7);
  });
});
