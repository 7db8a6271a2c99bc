/**
 * A 1A1F CPU topology from real processes: an FFN rank and an attention rank joined over
 * the TCP connector (dual-batch overlap on, low thresholds, so steps are split into two
 * stages), the front router in front, and afd-bench serve through the router. Stopping
 * the attention rank sends the shutdown flag, so the FFN rank stops too.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePortBlock } from '@afd/native/ports';
import { FrontRouter } from '../serving/router/FrontRouter.js';
import { addonPath, bundle, RoleProcess } from './testing/roleProcess.js';

const addon = addonPath();
const run = promisify(execFile);

describe.skipIf(addon === null)('1A1F topology (real processes, CPU)', () => {
  const home = mkdtempSync(join(tmpdir(), 'afd-home-'));
  let ffn: RoleProcess;
  let attn: RoleProcess;
  let router: FrontRouter;
  let routerUrl: string;

  beforeAll(async () => {
    const cli = await bundle('cli');
    const afdPort = await freePortBlock(1);
    const env = { AFD_HOME: home, AFD_NATIVE_ADDON: addon!, CUDA_VISIBLE_DEVICES: '' };
    const common = ['--api-port', '0', '--backend', 'cpu', '--threads', '1', '--afd-port', String(afdPort), '--topology', '1A1F'];
    const config = JSON.stringify({ dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 16 } });
    // The FFN rank creates the default model first; the attention rank starts once it exists.
    ffn = new RoleProcess(cli, ['role', 'ffn', ...common, '--config', config], env);
    await ffn.waitFor('progress', 60_000);
    await ffn.waitFor('listening', 60_000);
    const deadline = Date.now() + 100_000;
    while (!ffn.events.some((e) => e.type === 'progress' && e.phase === 'rendezvous') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    attn = new RoleProcess(cli, ['role', 'attention', ...common, '--config', config, '--served-model-name', 'tiny'], env);
    await attn.waitFor('ready', 110_000);
    await ffn.waitFor('ready', 30_000);
    router = new FrontRouter({ backends: [attn.apiUrl()] });
    routerUrl = await router.listen(0, '127.0.0.1');
  }, 240_000);

  afterAll(async () => {
    await router?.close();
    await attn?.stop();
    await ffn?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('the FFN rank serves health, metrics and stats but no OpenAI API', async () => {
    const url = ffn.apiUrl();
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect((await fetch(`${url}/v1/models`)).status).toBe(404);
    const stats = JSON.parse(await (await fetch(`${url}/afd/stats`)).text());
    expect(stats).toMatchObject({ role: 'ffn', kv: null });
    expect(stats.ffnLoop.state).toMatch(/idle|waiting-control|receiving|computing|sending/);
  });

  it('afd-bench serve through the front router prints the full report', async () => {
    const bench = await bundle('bench');
    const { stdout } = await run(process.execPath, [bench, 'serve', '--base-url', routerUrl, '--num-prompts', '12', '--random-input-len', '24', '--random-output-len', '8', '--max-concurrency', '6', '--ignore-eos', '--no-progress'], { timeout: 150_000 });
    expect(stdout).toMatch(/Successful requests:\s+12/);
    expect(stdout).toMatch(/Failed requests:\s+0/);
    for (const label of ['Output token throughput', 'Mean TTFT', 'Median TPOT', 'P99 ITL', 'Mean E2EL']) expect(stdout).toContain(label);
    const attnStats = JSON.parse(await (await fetch(`${attn.apiUrl()}/afd/stats`)).text());
    expect(attnStats.kv.blocksUsed).toBe(0);
    // Hidden states crossed the wire in both stages of layer 0 (DBO split the batches).
    expect(attnStats.a2fBytes[0][0]).toBeGreaterThan(0);
    expect(attnStats.a2fBytes[0][1]).toBeGreaterThan(0);
    const metrics = await (await fetch(`${routerUrl}/metrics`)).text();
    expect(metrics).toMatch(/vllm:generation_tokens_total\{model_name="tiny",backend="0"\} [1-9]/);
    expect(metrics).toMatch(/afd:a2f_bytes_total\{layer="0",stage="1",backend="0"\} [1-9]/);
  }, 200_000);

  it('stopping the attention rank stops the FFN rank (shutdown flag), both exit 0', async () => {
    expect(await attn.stop()).toBe(0);
    expect(await ffn.exited).toBe(0);
    expect(attn.events.at(-1)).toEqual({ type: 'stopped' });
    expect(ffn.events.at(-1)).toEqual({ type: 'stopped' });
  }, 60_000);
});
