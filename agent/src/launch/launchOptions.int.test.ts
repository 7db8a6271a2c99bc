/**
 * `afd-agent launch` passes the role's serving flags through and guards its API (real
 * processes: 1A1F, CPU, the small serving model): the API key from $AFD_API_KEY,
 * --max-model-len, --kv-cache-mib, --max-num-seqs and --max-queued-requests reach the
 * ranks (and vllm:cache_config_info); --allowed-origins reaches the front router's CORS (another origin gets 403); a
 * relative --model is resolved; a non-loopback --api-host without a key is
 * refused; and with --restart never an FFN death ends the launch (exit 1) while its
 * streams still end with an error event and [DONE].
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentScript, testAddonPath } from '../testing/agentBundle.js';
import { isAlive, pidsMentioning } from '../testing/AgentProcess.js';
import { startLaunch, type StartedLaunch } from '../testing/LaunchProcess.js';
import { makeServingModel } from '../testing/servingModel.js';
import { postStream, type StreamOutcome } from '../testing/sseClient.js';
import { until as waitUntil } from '../testing/until.js';

const home = mkdtempSync(join(tmpdir(), 'afd-launch-options-'));
const key = 'options-test-key';
const auth = { authorization: `Bearer ${key}` };
let launch: StartedLaunch | undefined;

beforeAll(async () => {
  await makeServingModel(join(home, 'tiny-serving'));
}, 120_000);

afterAll(() => {
  if (launch && launch.child.exitCode === null) launch.child.kill('SIGKILL');
  for (const pid of launch?.pids.values() ?? []) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  rmSync(home, { recursive: true, force: true });
});

const until = (cond: () => Promise<boolean>, what: string, ms: number): Promise<number> =>
  waitUntil(cond, what, ms, { pollMs: 50, explain: () => launch?.stderr().slice(-3000) ?? '' });

describe('afd-agent launch options', () => {
  it('refuses a non-loopback --api-host without an API key, before starting anything', async () => {
    const script = await agentScript();
    const child = spawn(process.execPath, [script, 'launch', '--backend', 'cpu', '--api-host', '0.0.0.0', '--api-port', '0'], {
      env: { ...process.env, AFD_HOME: home, AFD_NATIVE_ADDON: testAddonPath(), AFD_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr).toMatch(/refusing to serve the OpenAI API on non-loopback address 0\.0\.0\.0 without an API key.*--api-key/);
    expect(stderr).not.toMatch(/started \(pid/);
  });

  it('passes the serving flags and the key to the ranks; --restart never ends the launch on an FFN death, streams ending cleanly', { timeout: 300_000 }, async () => {
    launch = await startLaunch(
      ['--topology', '1A1F', '--model', 'tiny-serving', '--restart', 'never', '--max-model-len', '4096', '--kv-cache-mib', '8', '--max-num-seqs', '2', '--max-queued-requests', '0', '--stop-grace-ms', '2000', '--allowed-origins', '["https://app.example"]'],
      { home, cwd: home, env: { AFD_API_KEY: key } },
    );
    expect(launch.stderr()).toContain(`model ${join(home, 'tiny-serving')}`); // resolved against the working directory
    expect((await fetch(`${launch.api}/v1/models`)).status).toBe(401);
    const models = (await (await fetch(`${launch.api}/v1/models`, { headers: auth })).json()) as { data: { max_model_len: number }[] };
    expect(models.data[0]!.max_model_len).toBe(4096);
    // 8 MiB of KV: 2 layers x 1 KV head x 32 x (K, V) x 4 bytes x 16 tokens = 8 KiB a block -> 1024 blocks.
    const stats = (await (await fetch(`${launch.api}/afd/stats`)).json()) as { kv: { blocksTotal: number } };
    expect(stats.kv.blocksTotal).toBe(1024);
    const metrics = await (await fetch(`${launch.api}/metrics`)).text();
    expect(metrics).toMatch(/^vllm:cache_config_info\{block_size="16",.*kv_cache_memory_bytes="8388608",.*num_gpu_blocks="1024",backend="0"\} 1$/m);
    // CORS at the router: a preflight is answered before the key; responses to the origin carry it.
    const preflight = await fetch(`${launch.api}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
    expect([preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([200, 'https://app.example']);
    await preflight.text();
    const fromApp = await fetch(`${launch.api}/v1/models`, { headers: { ...auth, origin: 'https://app.example' } });
    expect(fromApp.headers.get('access-control-allow-origin')).toBe('https://app.example');
    await fromApp.text();
    // Any other origin is refused at the router before it is routed (the key does not help a page that has it).
    const foreign = await fetch(`${launch.api}/v1/models`, { headers: { ...auth, origin: 'https://attacker.example' } });
    expect([foreign.status, ((await foreign.json()) as { error: { code: string } }).error.code]).toEqual([403, 'forbidden_origin']);

    // --max-num-seqs 2 and --max-queued-requests 0: two streams run, a third would wait and is refused.
    const streams: Promise<StreamOutcome>[] = [0, 1].map((i) => postStream(`${launch!.api}/v1/completions`, { model: 'tiny-serving', prompt: [3 + i, 4], max_tokens: 4000, ignore_eos: true, stream: true }, auth));
    await until(async () => (await (await fetch(`${launch!.api}/metrics`)).text()).includes('vllm:num_requests_running{model_name="tiny-serving",backend="0"} 2'), 'two running', 30_000);
    const third = await fetch(`${launch.api}/v1/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny-serving', prompt: [9], max_tokens: 2 }) });
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
    await third.text();

    process.kill(launch.pids.get('ffn 0')!, 'SIGKILL');
    expect(await launch.exited).toBe(1);
    expect(launch.stderr()).toMatch(/afd-agent launch: ffn rank 0 was killed by SIGKILL/);
    expect(launch.stderr()).not.toMatch(/restarting/);
    for (const o of await Promise.all(streams)) {
      expect(o.status).toBe(200);
      expect(o.broken).toBeNull();
      expect(o.done).toBe(true);
      expect(o.errors.length).toBe(1);
    }
    expect(pidsMentioning(launch.script)).toEqual([]);
  });
});
