/**
 * `afd-agent launch` as a user runs it: 1A1F on the CPU backend in the foreground, the
 * summary with the OpenAI endpoint, a completion through the front router, then SIGTERM
 * stops every rank and the command exits 0 with no process left.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive, pidsMentioning } from '../testing/AgentProcess.js';
import { startLaunch, type StartedLaunch } from '../testing/LaunchProcess.js';
import { defaultServedModelName } from '../model/defaultModel.js';

let launch: StartedLaunch | undefined;
const home = mkdtempSync(join(tmpdir(), 'afd-launch-home-'));
afterAll(() => {
  if (launch && launch.child.exitCode === null) launch.child.kill('SIGKILL');
  rmSync(home, { recursive: true, force: true });
});

describe('afd-agent launch', () => {
  it('launches 1A1F in the foreground, serves the API, and stops everything on SIGTERM', async () => {
    launch = await startLaunch(['--topology', '1A1F', '--stop-grace-ms', '5000'], { home, readyMs: 150_000 });
    expect(launch.stdout()).toMatch(/^1A1F ready in [\d.]+ s/);
    expect(launch.api).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const pids = [...launch.pids.values()];
    expect(pids).toHaveLength(2);
    expect(launch.stderr()).toMatch(/ffn 0: started/);
    const res = await fetch(`${launch.api}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: defaultServedModelName(), prompt: 'hello', max_tokens: 3, temperature: 0 }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(1);

    expect(await launch.term()).toBe(0);
    expect(launch.stderr()).toMatch(/all ranks stopped/);
    expect(pids.filter(isAlive)).toEqual([]);
    expect(pidsMentioning(launch.script)).toEqual([]);
  }, 200_000);
});
