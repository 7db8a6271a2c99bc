/**
 * The colocated role as a real process on the real CPU engine with the built-in model
 * (created on first use in a temp AFD_HOME): events, the official openai client, a
 * 64-concurrent streaming load with no errors and no leaked KV blocks, afd-bench serve,
 * the cross-site refusals of its port, and a graceful SIGTERM.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findDemoModelDir } from '../model/demoModel.js';
import { bundleEntry, testAddonBuilt, testAddonPath } from '../testing/agentBundle.js';
import { killAllRoles, RoleProcess } from '../testing/RoleProcess.js';
import { rawRequest } from '../serving/testing/rawHttp.js';

const run = promisify(execFile);

describe.skipIf(!testAddonBuilt())('colocated role process (real CPU engine)', () => {
  const home = mkdtempSync(join(tmpdir(), 'afd-home-'));
  let role: RoleProcess;
  let cli: string;
  let url: string;
  let client: OpenAI;

  beforeAll(async () => {
    cli = await bundleEntry('cli');
    // The built-in model (no --model), the CLI's serving defaults (64 sequences, 256 MiB of KV cache).
    role = await RoleProcess.start({ role: 'colocated', home, threads: 2, maxNumSeqs: 64, kvCacheMib: 256, servedModelName: 'tiny', env: { CUDA_VISIBLE_DEVICES: '' } });
    await role.event('ready', 110_000);
    url = role.apiUrl();
    client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await role?.stop();
    await killAllRoles();
    rmSync(home, { recursive: true, force: true });
  });

  it('reports progress, listening, warmup and ready in order on stdout, and nothing else there', () => {
    expect(role.strayStdout).toEqual([]);
    const types = role.events.map((e) => e.type);
    expect(types[0]).toBe('progress');
    expect(types.indexOf('listening')).toBeLessThan(types.indexOf('ready'));
    expect(role.events.some((e) => e.type === 'progress' && e.phase === 'warmup')).toBe(true);
  });

  it('answers the openai client: chat and completions, streaming and not', async () => {
    const chat = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, temperature: 0 });
    expect(chat.choices[0]!.finish_reason).toMatch(/stop|length/);
    expect(chat.usage!.prompt_tokens).toBeGreaterThan(5);
    const again = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, temperature: 0 });
    expect(again.choices[0]!.message.content).toBe(chat.choices[0]!.message.content); // greedy is deterministic

    const stream = await client.completions.create({ model: 'tiny', prompt: 'The capital of France is', max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.text ?? '';
      if (c.usage) usage = c.usage;
    }
    const plain = await client.completions.create({ model: 'tiny', prompt: 'The capital of France is', max_tokens: 8, temperature: 0 });
    expect(text).toBe(plain.choices[0]!.text);
    expect(usage!.completion_tokens).toBe(plain.usage!.completion_tokens);
  });

  it('serves 64 concurrent streaming requests with no errors and no leaked KV blocks', async () => {
    const runs = Array.from({ length: 64 }, async (_, i) => {
      const stream = await client.completions.create({ model: 'tiny', prompt: `Request ${i}: tell me a story about`, max_tokens: 12, temperature: 0.8, seed: i, stream: true, stream_options: { include_usage: true } });
      let tokens = 0;
      let finish: string | null = null;
      for await (const c of stream) {
        finish = c.choices[0]?.finish_reason ?? finish;
        if (c.usage) tokens = c.usage.completion_tokens;
      }
      return { tokens, finish };
    });
    const results = await Promise.all(runs);
    for (const r of results) {
      expect(r.finish).toMatch(/stop|length/);
      expect(r.tokens).toBeGreaterThan(0);
    }
    const stats = JSON.parse(await (await fetch(`${url}/afd/stats`)).text());
    expect(stats.kv.blocksUsed).toBe(0);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/vllm:num_requests_running\{model_name="tiny"\} 0/);
    expect(metrics).toMatch(/vllm:kv_cache_usage_perc\{model_name="tiny"\} 0/);
  }, 240_000);

  it('a client that disconnects mid-stream frees its KV blocks', async () => {
    const ctrl = new AbortController();
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', prompt: 'word '.repeat(200), max_tokens: 1500, ignore_eos: true, stream: true }), // within the demo model's 2048 positions
      signal: ctrl.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    const during = JSON.parse(await (await fetch(`${url}/afd/stats`)).text());
    expect(during.kv.blocksUsed).toBeGreaterThan(0);
    ctrl.abort();
    const deadline = Date.now() + 10_000;
    let used = -1;
    while (Date.now() < deadline) {
      used = JSON.parse(await (await fetch(`${url}/afd/stats`)).text()).kv.blocksUsed;
      if (used === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(used).toBe(0);
  });

  it('afd-agent generate streams tokens from the default model and prints tokens/s', async () => {
    const { stdout, stderr } = await run(process.execPath, [cli, 'generate', '--prompt', 'Hello there', '--max-tokens', '8', '--backend', 'cpu', '--threads', '1', '--ignore-eos'], {
      env: { ...process.env, AFD_HOME: home, AFD_NATIVE_ADDON: testAddonPath(), AFD_LOG_LEVEL: 'warn' },
      timeout: 120_000,
    });
    expect(stdout.trim().length).toBeGreaterThan(0);
    expect(stdout.endsWith('\n')).toBe(true);
    expect(stderr).toMatch(/8 tokens generated in [\d.]+ s, [\d.]+ tokens\/s decode \(finish: length\)/);
    // Plain lines for a person: no pino JSON, counted nouns in the right number.
    expect(stderr).not.toContain('{"level"');
    // The built-in model: the demo model where the checkout has it (6 layers), else the random tiny one (4).
    const demo = findDemoModelDir();
    if (demo) expect(stderr).toContain(`using the demo model in ${demo}`);
    expect(stderr).toMatch(new RegExp(`^loaded in \\d+ ms: qwen3_moe colocated on cpu \\(1 thread\\): ${demo ? 6 : 4} layers`, 'm'));
    expect(stderr).toMatch(/^(1 prompt token|\d+ prompt tokens) in \d+ ms/m);
  }, 150_000);

  it('afd-bench serve prints the full report and writes JSON', async () => {
    const bench = await bundleEntry('bench');
    const jsonOut = join(home, 'bench.json');
    const { stdout } = await run(process.execPath, [bench, 'serve', '--base-url', url, '--num-prompts', '8', '--random-input-len', '16', '--random-output-len', '8', '--max-concurrency', '4', '--ignore-eos', '--no-progress', '--json-out', jsonOut], { timeout: 120_000 });
    for (const label of ['Successful requests:', 'Output token throughput', 'Median TTFT', 'P99 TPOT', 'Mean ITL', 'P99 E2EL']) expect(stdout).toContain(label);
    const result = JSON.parse(readFileSync(jsonOut, 'utf8'));
    expect(result).toMatchObject({ completed: 8, failed: 0, totalOutputTokens: 64 });
  }, 150_000);

  it('refuses what a web page could send its loopback port: a foreign Host (DNS rebinding), a foreign Origin, a text/plain body; nothing is generated', async () => {
    const promptTokens = async (): Promise<number> => Number(/^vllm:prompt_tokens_total\{[^}]*\} (\S+)$/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? NaN);
    const before = await promptTokens();
    const body = JSON.stringify({ model: 'tiny', prompt: 'Hello', max_tokens: 4 });
    const host = new URL(url).host;
    const json = { 'content-type': 'application/json' };
    const rebound = await rawRequest(url, 'POST', '/v1/completions', { ...json, host: `attacker.example:${new URL(url).port}` }, body);
    expect([rebound.status, rebound.error?.code]).toEqual([403, 'forbidden_host']);
    expect((await rawRequest(url, 'GET', '/metrics', { host: 'attacker.example' })).status).toBe(403);
    const foreign = await rawRequest(url, 'POST', '/v1/completions', { ...json, host, origin: 'https://attacker.example' }, body);
    expect([foreign.status, foreign.error?.code]).toEqual([403, 'forbidden_origin']);
    const plain = await rawRequest(url, 'POST', '/v1/completions', { host, 'content-type': 'text/plain' }, body);
    expect([plain.status, plain.error?.code]).toEqual([400, 'unsupported_media_type']);
    expect(await promptTokens()).toBe(before);
    expect(before).toBeGreaterThan(0); // the counter moves: earlier tests generated
  });

  it('stops gracefully on SIGTERM: "stopped" event, exit 0', async () => {
    const { code } = await role.stop();
    expect(code).toBe(0);
    expect(role.events.at(-1)).toEqual({ type: 'stopped' });
  });
});
