/**
 * `afd-agent launch --load-format dummy` on a model directory that holds only config.json
 * and a tokenizer (make-model --config-only): every rank generates its own random weights
 * from the seed, so 1A1F (attention and FFN processes over TCP) answers a greedy request
 * (seeded sampling) with exactly the text of the colocated launch of the same weight seed, and `auto` refuses the
 * directory with an error that names --load-format dummy.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '../model/makeModel.js';
import { agentScript, testAddonPath } from '../testing/agentBundle.js';

const home = mkdtempSync(join(tmpdir(), 'afd-dummy-home-'));
const modelDir = join(home, 'tiny-config-only');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(home, { recursive: true, force: true });
});

interface Launched {
  api: string | undefined;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
  child: ChildProcess;
}

async function launch(args: string[]): Promise<Launched> {
  const script = await agentScript();
  const child = spawn(process.execPath, [script, 'launch', '--backend', 'cpu', '--threads', '1', '--api-port', '0', '--stop-grace-ms', '5000', '--model', modelDir, ...args], {
    env: { ...process.env, AFD_HOME: home, AFD_NATIVE_ADDON: testAddonPath() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const out: Launched = { api: undefined, stdout: '', stderr: '', child, exited: new Promise((r) => child.once('exit', (code) => r(code))) };
  child.stdout!.on('data', (c: Buffer) => (out.stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out.stderr += c.toString()));
  const t0 = Date.now();
  while (!/Ctrl-C stops every rank/.test(out.stdout) && child.exitCode === null) {
    if (Date.now() - t0 > 150_000) throw new Error(`no summary within 150 s: ${out.stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  out.api = /OpenAI API: (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(out.stdout)?.[1];
  return out;
}

// Seeded sampling at temperature 1: the text is a function of the weights (a tied random
// model's greedy text only repeats the prompt's last token, whatever the seed).
async function sample(api: string): Promise<string> {
  const res = await fetch(`${api}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny-config-only', prompt: 'The lighthouse keeper', max_tokens: 16, temperature: 1, seed: 42, ignore_eos: true }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { choices: { text: string }[] }).choices[0]!.text;
}

async function stop(l: Launched): Promise<void> {
  l.child.kill('SIGTERM');
  expect(await l.exited).toBe(0);
}

describe('afd-agent launch --load-format dummy', () => {
  it('serves a config-only model with generated weights; 1A1F equals colocated for one seed', async () => {
    await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: modelDir, configOnly: true });

    // --restart never: the refusal ends the launch (on-failure would retry the rank with back-off).
    const refused = await launch(['--topology', 'colocated', '--restart', 'never']);
    expect(await refused.exited).not.toBe(0);
    expect(refused.stdout + refused.stderr).toMatch(/--load-format dummy/);

    const colocated = await launch(['--topology', 'colocated', '--load-format', 'dummy', '--seed', '7']);
    expect(colocated.api).toBeDefined();
    const want = await sample(colocated.api!);
    await stop(colocated);

    const split = await launch(['--topology', '1A1F', '--load-format', 'dummy', '--seed', '7']);
    expect(split.api).toBeDefined();
    expect(await sample(split.api!)).toBe(want);
    await stop(split);

    const other = await launch(['--topology', 'colocated', '--load-format', 'dummy', '--seed', '8']);
    expect(await sample(other.api!)).not.toBe(want);
    await stop(other);
  }, 400_000);
});
