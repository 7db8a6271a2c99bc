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
import { bundleEntry, testAddonBuilt } from '../testing/agentBundle.js';
import { killAllRoles, RoleProcess, type RoleProcessOptions } from '../testing/RoleProcess.js';

const run = promisify(execFile);

describe.skipIf(!testAddonBuilt())('1A1F topology (real processes, CPU)', () => {
  const home = mkdtempSync(join(tmpdir(), 'afd-home-'));
  let ffn: RoleProcess;
  let attn: RoleProcess;
  let router: FrontRouter;
  let routerUrl: string;

  beforeAll(async () => {
    const afdPort = await freePortBlock(1);
    // The built-in model (no --model), the CLI's serving defaults (64 sequences, 256 MiB of KV cache).
    const common: Omit<RoleProcessOptions, 'role'> = {
      topology: '1A1F',
      afdPort,
      home,
      maxNumSeqs: 64,
      kvCacheMib: 256,
      servedModelName: 'tiny',
      config: { dbo: { enabled: true, decodeTokenThreshold: 2, prefillTokenThreshold: 16 } },
      env: { CUDA_VISIBLE_DEVICES: '' },
    };
    // The FFN rank creates the default model first; the attention rank starts once it exists.
    ffn = await RoleProcess.start({ ...common, role: 'ffn' });
    await ffn.event('progress', 60_000);
    await ffn.event('listening', 60_000);
    await ffn.waitFor((e): e is Extract<typeof e, { type: 'progress' }> => e.type === 'progress' && e.phase === 'rendezvous', 'the rendezvous', 100_000);
    attn = await RoleProcess.start({ ...common, role: 'attention' });
    await attn.event('ready', 110_000);
    await ffn.event('ready', 30_000);
    router = new FrontRouter({ backends: [attn.apiUrl()] });
    routerUrl = await router.listen(0, '127.0.0.1');
  }, 240_000);

  afterAll(async () => {
    await router?.close();
    await attn?.stop();
    await ffn?.stop();
    await killAllRoles();
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
    const bench = await bundleEntry('bench');
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
    expect((await attn.stop()).code).toBe(0);
    expect((await ffn.exited).code).toBe(0);
    expect(attn.events.at(-1)).toEqual({ type: 'stopped' });
    expect(ffn.events.at(-1)).toEqual({ type: 'stopped' });
    // stdout carries role events only.
    expect([...attn.strayStdout, ...ffn.strayStdout]).toEqual([]);
  }, 60_000);
});
