/**
 * `afd-agent launch` as a user runs it: 1A1F on the CPU backend in the foreground, the
 * summary with the OpenAI endpoint, a completion through the front router, then SIGTERM
 * stops every rank and the command exits 0 with no process left.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentScript, testAddonPath } from '../testing/agentBundle.js';
import { isAlive, pidsMentioning } from '../testing/AgentProcess.js';
import { defaultServedModelName } from '../model/defaultModel.js';

let child: ChildProcess | undefined;
const home = mkdtempSync(join(tmpdir(), 'afd-launch-home-'));
afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  rmSync(home, { recursive: true, force: true });
});

describe('afd-agent launch', () => {
  it('launches 1A1F in the foreground, serves the API, and stops everything on SIGTERM', async () => {
    const script = await agentScript();
    child = spawn(process.execPath, [script, 'launch', '--topology', '1A1F', '--backend', 'cpu', '--threads', '1', '--api-port', '0', '--stop-grace-ms', '5000'], {
      env: { ...process.env, AFD_HOME: home, AFD_NATIVE_ADDON: testAddonPath() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    const t0 = Date.now();
    while (!/Ctrl-C stops every rank/.test(stdout)) {
      if (child.exitCode !== null) throw new Error(`launch exited early (${child.exitCode}): ${stderr}`);
      if (Date.now() - t0 > 150_000) throw new Error(`no summary within 150 s: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(stdout).toMatch(/^1A1F ready in [\d.]+ s/);
    const api = /OpenAI API: (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(stdout)?.[1];
    expect(api).toBeDefined();
    const pids = [...stdout.matchAll(/pid (\d+)/g)].map((m) => Number(m[1]));
    expect(pids).toHaveLength(2);
    expect(stderr).toMatch(/ffn 0: started/);
    const res = await fetch(`${api}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: defaultServedModelName(), prompt: 'hello', max_tokens: 3, temperature: 0 }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(1);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/all ranks stopped/);
    expect(pids.filter(isAlive)).toEqual([]);
    expect(pidsMentioning(script)).toEqual([]);
  }, 200_000);
});
