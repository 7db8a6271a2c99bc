/**
 * A lost MPS server, through LaunchGpuSharing with a real MpsHost and the stand-in control
 * program: the test plays the server with a process of its own (its pid listed by the
 * stand-in's get_server_list), kills it, and the launch is told which GPU's ranks hang, with
 * what MPS says; once the launch stops, the daemon's end is not reported as a loss.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchSpecSchema } from '@afd/shared';
import { installMpsStandIn, type MpsStandIn } from '../testing/mpsStandIn.js';
import { until } from '../testing/until.js';
import { LaunchGpuSharing } from './LaunchGpuSharing.js';
import { MpsHost } from './MpsHost.js';
import type { MpsServerLoss } from './MpsServerWatch.js';

let standIn: MpsStandIn;
beforeAll(async () => {
  standIn = await installMpsStandIn();
});
afterAll(() => standIn.remove());

describe('LaunchGpuSharing: a lost MPS server', { timeout: 60_000 }, () => {
  it('reports the server that died, naming the GPU and its ranks, and nothing after the launch stops', async () => {
    const home = mkdtempSync(join(tmpdir(), 'afd-mps-loss-'));
    const server = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      const mps = new MpsHost({ home, env: { ...process.env, ...standIn.env('ok') } });
      const spec = launchSpecSchema.parse({
        mode: 'afd',
        topology: '1A1F',
        apiPort: 0,
        placements: [
          { role: 'ffn', rank: 0, agentId: 'a', backend: 'cuda', deviceIndex: 0 },
          { role: 'attention', rank: 0, agentId: 'a', backend: 'cuda', deviceIndex: 0 },
        ],
      });
      const losses: { loss: MpsServerLoss; message: string }[] = [];
      const sharing = new LaunchGpuSharing({ spec, agentId: 'a', agentMode: 'auto', mps, serverWatchMs: 100, onServerLost: (loss, message) => losses.push({ loss, message }) });
      await sharing.start();
      expect(sharing.gpus[0]!.sharing).toBe('mps');
      // The first client connected: the daemon lists its server.
      writeFileSync(join(mps.dirs.pipeDirectory, 'servers'), `${server.pid}\n`);
      await expect(mps.serverPids()).resolves.toEqual([server.pid]);
      await new Promise((r) => setTimeout(r, 500));
      expect(losses).toEqual([]);
      const killedAt = Date.now();
      server.kill('SIGKILL');
      await until(() => losses.length > 0, 'the loss to be reported', 10_000);
      const reportedAt = Date.now();
      expect(losses[0]!.loss.pids).toEqual([server.pid]);
      // Last seen alive around the kill (a just-killed child answers signal 0 until it is reaped).
      expect(losses[0]!.loss.lastAliveMs).toBeGreaterThan(killedAt - 1000);
      expect(losses[0]!.loss.lastAliveMs).toBeLessThan(reportedAt);
      expect(losses[0]!.message).toMatch(new RegExp(`^the MPS server \\(pid ${server.pid}\\) of GPU 0 \\(ffn 0, attention 0\\) exited; ranks that were its clients hang on it instead of failing, so they are stopped`));
      // A second server, started for the restarted ranks, then the launch ends: no report.
      const second = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
      writeFileSync(join(mps.dirs.pipeDirectory, 'servers'), `${second.pid}\n`);
      await new Promise((r) => setTimeout(r, 400));
      await sharing.stop();
      second.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 400));
      expect(losses).toHaveLength(1);
    } finally {
      server.kill('SIGKILL');
      standIn.quitDaemons([join(home, 'mps', 'pipe')]);
      rmSync(home, { recursive: true, force: true });
    }
  });
});
