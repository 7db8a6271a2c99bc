import { afterEach, describe, expect, it } from 'vitest';
import { ChildProcessGroup, liveGroupCount } from './ChildProcessGroup.js';

const started: ChildProcessGroup[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop(500)));
});

function node(code: string, env: NodeJS.ProcessEnv = {}): ChildProcessGroup {
  const lines: string[] = [];
  const c = new ChildProcessGroup({ file: process.execPath, args: ['-e', code], env: { PATH: process.env['PATH'], ...env } }, { onStdoutLine: (l) => lines.push(l) });
  started.push(c);
  return c;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('ChildProcessGroup', () => {
  it('captures stdout/stderr lines and the exit code', async () => {
    const c = node('console.log("a"); console.error("b"); console.log(JSON.stringify({x:1})); process.exit(3)');
    c.start();
    const exit = await c.waitExit();
    expect(exit).toEqual({ exitCode: 3, signal: null, requested: false });
    expect(c.logs.since().map((l) => `${l.stream}:${l.text}`).sort()).toEqual(['stderr:b', 'stdout:a', 'stdout:{"x":1}']);
  });

  it('stops the whole process group, grandchildren included', async () => {
    const code = `
      const { spawn } = require('node:child_process');
      const g = spawn(process.execPath, ['-e', 'setInterval(()=>{}, 1000)'], { stdio: 'ignore' });
      console.log(g.pid);
      setInterval(() => {}, 1000);`;
    let grandchild = 0;
    const c = new ChildProcessGroup(
      { file: process.execPath, args: ['-e', code], env: { PATH: process.env['PATH'] } },
      { onStdoutLine: (l) => (grandchild = Number(l)) },
    );
    started.push(c);
    c.start();
    const t0 = Date.now();
    while (grandchild === 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(alive(grandchild)).toBe(true);
    const exit = await c.stop(2000);
    expect(exit.requested).toBe(true);
    const t1 = Date.now();
    while (alive(grandchild) && Date.now() - t1 < 15_000) await new Promise((r) => setTimeout(r, 20));
    expect(alive(grandchild)).toBe(false);
  });

  it('escalates to SIGKILL when SIGTERM is ignored', async () => {
    const c = node('process.on("SIGTERM", () => {}); console.log("ready"); setInterval(() => {}, 1000)');
    c.start();
    // Wait for the handler to be installed (node can take over 300 ms to start on a loaded CI box).
    const t0 = Date.now();
    while (!c.logs.since().some((l) => l.text === 'ready') && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 20));
    const exit = await c.stop(300);
    expect(exit.signal).toBe('SIGKILL');
    expect(liveGroupCount()).toBe(0);
  });

  it('reports a crash (killed by a signal) that was not requested', async () => {
    const c = node('setInterval(() => {}, 1000)');
    c.start();
    c.kill('SIGKILL');
    expect(await c.waitExit()).toEqual({ exitCode: null, signal: 'SIGKILL', requested: false });
  });

  it('reports a spawn failure as exit code 127 with a log line', async () => {
    const c = new ChildProcessGroup({ file: '/nonexistent/afd-binary', args: [], env: {} });
    c.start();
    const exit = await c.waitExit();
    expect(exit.exitCode).toBe(127);
    expect(c.logs.tail(1)[0]).toMatch(/spawn of .* failed: .*ENOENT/);
  });
});
