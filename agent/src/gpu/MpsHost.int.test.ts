/**
 * MpsHost against the stand-in control program (real processes: the stand-in daemonises,
 * listens on its pipe directory and records every command): start once, reuse, quit by the
 * last user only, never touch a daemon someone else runs, clear errors with nothing left
 * running, and a restart of a daemon that died.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { installMpsStandIn, type MpsStandIn } from '../testing/mpsStandIn.js';
import { MpsError, MpsHost } from './MpsHost.js';
import { mpsDaemonAnswers } from './mpsControl.js';

let standIn: MpsStandIn;
const homes: string[] = [];
const pipeDirs: string[] = [];

beforeAll(async () => {
  standIn = await installMpsStandIn();
});

afterEach(() => {
  standIn.quitDaemons(pipeDirs.splice(0));
  for (const h of homes.splice(0)) rmSync(h, { recursive: true, force: true });
  rmSync(standIn.recordFile, { force: true });
});

afterAll(() => standIn.remove());

function host(mode: Parameters<MpsStandIn['env']>[0] = 'ok', extra: Partial<ConstructorParameters<typeof MpsHost>[0]> = {}, env: NodeJS.ProcessEnv = {}): MpsHost {
  const home = mkdtempSync(join(tmpdir(), 'afd-mps-home-'));
  homes.push(home);
  const h = new MpsHost({ home, env: { ...process.env, ...standIn.env(mode), ...env }, ...extra });
  pipeDirs.push(h.dirs.pipeDirectory);
  return h;
}

const answers = (h: MpsHost, dir = h.dirs.pipeDirectory): Promise<boolean> => mpsDaemonAnswers(standIn.program, dir, process.env, 5000);

describe('MpsHost (stand-in control program)', { timeout: 60_000 }, () => {
  it('reports a missing control program, and refuses to acquire naming where it looked', async () => {
    const h = host('ok', { findProgram: () => null });
    const status = await h.status();
    expect(status.controlProgram).toBeNull();
    expect(status.unavailable).toMatch(/^nvidia-cuda-mps-control was not found on PATH or in \/usr\/local\/nvidia\/bin/);
    await expect(h.acquire()).rejects.toThrow(MpsError);
  });

  it('starts the daemon once for two leases, reports it, and quits it when the last lease ends', async () => {
    const h = host();
    expect((await h.status()).daemon).toBeNull();
    const first = await h.acquire();
    expect(first).toEqual({ pipeDirectory: h.dirs.pipeDirectory, managedByAgent: true, started: true });
    expect((await h.acquire()).started).toBe(false);
    expect(standIn.starts()).toHaveLength(1);
    expect(standIn.starts()[0]!.pipeDir).toBe(h.dirs.pipeDirectory);
    expect((await h.status()).daemon).toEqual({ pipeDirectory: h.dirs.pipeDirectory, managedByAgent: true });
    expect(await h.release()).toBeNull(); // one lease left
    expect(await answers(h)).toBe(true);
    expect(await h.release()).toBe(`stopped the MPS control daemon on ${h.dirs.pipeDirectory}`);
    expect(await answers(h)).toBe(false);
    expect(standIn.commands().filter((c) => c === 'quit')).toHaveLength(1);
    expect(readdirSync(join(h.dirs.pipeDirectory, '..', 'users'))).toEqual([]);
  });

  it('reuses a daemon someone else runs and never stops it', async () => {
    const foreign = mkdtempSync(join(tmpdir(), 'afd-mps-foreign-'));
    pipeDirs.push(foreign);
    const env = { ...process.env, ...standIn.env(), CUDA_MPS_PIPE_DIRECTORY: foreign };
    await new Promise((resolve) => spawn(standIn.program, ['-d'], { env, stdio: 'ignore' }).once('exit', resolve));
    const h = host('ok', {}, { CUDA_MPS_PIPE_DIRECTORY: foreign });
    expect((await h.status()).daemon).toEqual({ pipeDirectory: foreign, managedByAgent: false });
    expect(await h.acquire()).toEqual({ pipeDirectory: foreign, managedByAgent: false, started: false });
    expect(await h.release()).toBeNull();
    expect(await answers(h, foreign)).toBe(true);
    expect(standIn.commands()).not.toContain('quit');
    expect(existsSync(h.dirs.pipeDirectory)).toBe(false);
  });

  it('leaves the daemon to another live agent process that uses it; the last one quits it', async () => {
    const a = host();
    await a.acquire();
    // Another agent process on the same home: a live pid with a user file.
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    const usersDir = join(a.dirs.pipeDirectory, '..', 'users');
    writeFileSync(join(usersDir, String(other.pid)), `${other.pid}\n`);
    expect(await a.release()).toBe(`left the MPS control daemon running for agent process(es) ${other.pid} that use it too`);
    expect(await answers(a)).toBe(true);
    other.kill('SIGKILL');
    await new Promise((r) => other.once('exit', r));
    // The next user finds the daemon (no second start) and, as the last live one, quits it.
    await a.acquire();
    expect(standIn.starts()).toHaveLength(1);
    expect(await a.release()).toMatch(/^stopped the MPS control daemon/);
    expect(readdirSync(usersDir)).toEqual([]);
  });

  it('a daemon that dies at start is an error quoting its control.log, with nothing left running', async () => {
    const h = host('fail-start', { startTimeoutMs: 3000 });
    const err = await h.acquire().then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(MpsError);
    expect(err!.message).toMatch(/^the MPS control daemon \(.*nvidia-cuda-mps-control, pipe directory .*\) started \(nvidia-cuda-mps-control -d exited 0\) but did not answer within 3 s; its control\.log \(.*control\.log\) ends: .*Failed to start the control daemon: stand-in told to fail/);
    expect(await answers(h)).toBe(false);
    expect(readdirSync(join(h.dirs.pipeDirectory, '..', 'users'))).toEqual([]);
  });

  it('a -d that fails or hangs is an error saying so, never a hang', async () => {
    const failing = host('exit-1');
    await expect(failing.acquire()).rejects.toThrow(/did not start: nvidia-cuda-mps-control -d exited with code 1: stand-in: refusing to start/);
    const hanging = host('hang', { commandTimeoutMs: 1500 });
    const t0 = Date.now();
    await expect(hanging.acquire()).rejects.toThrow(/did not start: nvidia-cuda-mps-control -d did not finish within 2 s and was killed/);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('says what MPS knows after a rank failed: its server log, or a daemon that no longer answers', async () => {
    const h = host();
    expect(await h.failureContext()).toBeNull(); // no lease
    await h.acquire();
    expect(await h.failureContext()).toBeNull(); // answers, no server log
    writeFileSync(join(h.dirs.logDirectory, 'server.log'), '[2026-01-01 Server 77] Startup\n[2026-01-01 Server 77] Server exited with a fatal error: stand-in\n');
    expect(await h.failureContext()).toBe(`the MPS server log (${join(h.dirs.logDirectory, 'server.log')}) ends: [2026-01-01 Server 77] Startup | [2026-01-01 Server 77] Server exited with a fatal error: stand-in`);
    process.kill(standIn.starts()[0]!.pid, 'SIGKILL');
    expect(await h.failureContext()).toMatch(new RegExp(`^the MPS control daemon on ${h.dirs.pipeDirectory} no longer answers \\(its control.log ends: .*Starting control daemon`));
    await h.ensureRunning();
    await h.release();
  });

  it('starts its daemon again when it died under a lease', async () => {
    const h = host();
    await h.acquire();
    expect(await h.ensureRunning()).toBeNull();
    process.kill(standIn.starts()[0]!.pid, 'SIGKILL');
    const note = await h.ensureRunning();
    expect(note).toMatch(new RegExp(`^the MPS control daemon on ${h.dirs.pipeDirectory} had stopped answering \\(its control.log ends: .*\\); started it again for the restarted ranks$`));
    expect(standIn.starts()).toHaveLength(2);
    expect(await answers(h)).toBe(true);
    await h.release();
  });
});
