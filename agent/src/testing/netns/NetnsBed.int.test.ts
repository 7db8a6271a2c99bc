/**
 * The namespace bed for real (root and `ip netns`; skipped with the reason otherwise):
 * hosts reach each other by name over the bridge and not from the host's namespace,
 * each process carries its host's hostname, a cut link partitions a host and a restored
 * one heals it, a relay address reroutes a name, and teardown removes every namespace,
 * hosts file and process, grandchildren included, also when the test body throws, and
 * sweeps a bed whose owner died.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemRunner } from './commandRunner.js';
import { isRunning, NetnsBed, sweepStaleBeds, SWITCH } from './NetnsBed.js';
import { netnsSupport } from './netnsSupport.js';

const support = await netnsSupport();
const listNetns = async (): Promise<string> => (await systemRunner.run('ip', ['netns', 'list'])).stdout;
const alive = isRunning;

/** Runs a Node one-liner inside a host; resolves with its stdout (trimmed) and exit code. */
async function node(bed: NetnsBed, host: string, code: string): Promise<{ code: number; out: string }> {
  const r = await bed.exec(host, process.execPath, ['-e', code], 15_000);
  return { code: r.code, out: `${r.stdout}${r.stderr}`.trim() };
}

const tryConnect = (host: string, port: number): string =>
  `const s=require('net').connect({host:'${host}',port:${port},timeout:1500});s.on('connect',()=>{console.log('connected');s.destroy()});s.on('timeout',()=>{console.log('timeout');s.destroy()});s.on('error',e=>console.log(e.code))`;

describe.skipIf(!support.ok)(`network namespace bed${support.ok ? '' : ` (skipped: ${support.reason})`}`, () => {
  it('joins hosts by name, partitions and heals a link, reroutes a name, and tears down everything', { timeout: 60_000 }, async () => {
    const bed = await NetnsBed.create({ hosts: ['host-a', 'host-b', 'console'] });
    let grandchild = 0;
    try {
      expect(await listNetns()).toContain(bed.namespace('host-a'));
      expect((await bed.exec('host-a', 'hostname', [])).stdout.trim()).toBe('host-a');
      expect((await bed.exec('host-b', 'getent', ['hosts', 'host-a'])).stdout).toMatch(/^192\.0\.2\.10\s+host-a/);
      // A server on host-a; a grandchild (sleep) shows that teardown reaches processes the bed did not start itself.
      const server = bed.spawn('host-a', 'listener', process.execPath, [
        '-e',
        "require('child_process').spawn('sleep',['300'],{stdio:'ignore'}).unref();require('net').createServer(s=>{s.on('error',()=>{});s.end('hi')}).listen(7711,'host-a',()=>console.log('listening'))",
      ]);
      await server.waitForLine(/listening/, 10_000, 'listening');
      const inA = await bed.pids('host-a');
      expect(inA).toContain(server.pid);
      grandchild = inA.find((p) => p !== server.pid) ?? 0;
      expect(grandchild).toBeGreaterThan(0);
      expect((await node(bed, 'host-b', tryConnect('host-a', 7711))).out).toBe('connected');
      // The host's own namespace has no route to the bed.
      const fromRoot = await systemRunner.run(process.execPath, ['-e', tryConnect('192.0.2.10', 7711)]);
      expect(fromRoot.stdout.trim()).not.toBe('connected');

      await bed.setLink('host-a', 'down');
      expect(['timeout', 'EHOSTUNREACH']).toContain((await node(bed, 'host-b', tryConnect('host-a', 7711))).out);
      await bed.setLink('host-a', 'up');
      const t0 = Date.now();
      let after = '';
      while (after !== 'connected' && Date.now() - t0 < 15_000) after = (await node(bed, 'host-b', tryConnect('host-a', 7711))).out;
      expect(after).toBe('connected');

      bed.routeVia('host-a', bed.relayAddress('host-a'), ['console']);
      expect((await bed.exec('host-b', 'getent', ['hosts', 'host-a'])).stdout).toMatch(/^192\.0\.2\.110\s+host-a/);
      expect((await bed.exec('console', 'getent', ['hosts', 'host-a'])).stdout).toMatch(/^192\.0\.2\.10\s/);
      bed.routeVia('host-a', null);
      expect((await bed.exec('host-b', 'getent', ['hosts', 'host-a'])).stdout).toMatch(/^192\.0\.2\.10\s/);
    } finally {
      await bed.teardown();
    }
    const left = await listNetns();
    for (const h of ['host-a', 'host-b', 'console', SWITCH]) {
      expect(left).not.toContain(bed.namespace(h));
      expect(existsSync(join('/etc/netns', bed.namespace(h)))).toBe(false);
    }
    expect(alive(grandchild)).toBe(false);
    expect(existsSync(bed.dir)).toBe(false);
  });

  it('tears down when the test body throws', { timeout: 60_000 }, async () => {
    let bed: NetnsBed | undefined;
    let pid = 0;
    await expect(
      (async () => {
        bed = await NetnsBed.create({ hosts: ['host-a'] });
        try {
          pid = bed.spawn('host-a', 'sleeper', 'sleep', ['300']).pid;
          throw new Error('the test failed here');
        } finally {
          await bed.teardown();
        }
      })(),
    ).rejects.toThrow('the test failed here');
    expect(await listNetns()).not.toContain(bed!.id);
    expect(alive(pid)).toBe(false);
  });

  it('sweeps a bed whose owner died without tearing down', { timeout: 60_000 }, async () => {
    // What a SIGKILLed test runner leaves: namespaces named after its (now dead) pid, a process inside.
    const dead = spawn('true');
    await new Promise((r) => dead.once('exit', r));
    const ns = `afdbed-${dead.pid}-1-host-a`;
    expect((await systemRunner.run('ip', ['netns', 'add', ns])).code).toBe(0);
    const orphan = spawn('ip', ['netns', 'exec', ns, 'sleep', '300'], { stdio: 'ignore' });
    const t0 = Date.now();
    while (!(await systemRunner.run('ip', ['netns', 'pids', ns])).stdout.trim() && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20));
    expect(await sweepStaleBeds()).toContain(ns);
    expect(await listNetns()).not.toContain(ns);
    await new Promise((r) => (orphan.exitCode !== null || orphan.signalCode !== null ? r(null) : orphan.once('exit', r)));
    expect(orphan.signalCode).toBe('SIGKILL');
  });
});
