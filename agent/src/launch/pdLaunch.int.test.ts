/**
 * Prefill/decode disaggregation end to end (issue 41): `afd-agent launch` of wPxAyF
 * topologies with real role processes on the CPU (prefill ranks, attention and FFN ranks,
 * the KV by peer memory, the CPU's shared file, and over TCP when asked, the OpenAI API
 * through the front router). Greedy completions of
 * prompts long enough to be prefilled remotely equal the colocated launch's, the attention
 * rank's stats show the transfers (and the prefill ranks' the prefills they served), and a
 * prefill rank killed mid-service costs nothing but time: its prompts go to the other one
 * (or are prefilled on the attention rank) and the launch restarts it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePortBlock } from '@afd/native/ports';
import type { RankStats } from '@afd/shared';
import { makeModel } from '../model/makeModel.js';
import { startLaunch, type StartedLaunch } from '../testing/LaunchProcess.js';

const home = mkdtempSync(join(tmpdir(), 'afd-pd-home-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

const words = 'the quick brown fox jumps over a lazy dog while seven sailors sing about the northern lights and distant harbours';
// Prompts of about 20 to 70 tokens: each has full 16-token blocks to prefill remotely (--pd-min-prompt-tokens 8).
const prompts = [words, `${words} ${words}`, `Once upon a time ${words}`, `${words} ${words} ${words}`.slice(0, 300)];

async function launch(modelDir: string, args: string[]): Promise<StartedLaunch> {
  const pdPort = await freePortBlock(2);
  // Prefix caching off: every prompt is prefilled on a prefill rank, every time (the counts below are exact).
  return startLaunch(['--stop-grace-ms', '5000', '--no-enable-prefix-caching', '--model', modelDir, '--load-format', 'dummy', '--seed', '3', '--pd-port', String(pdPort), '--pd-min-prompt-tokens', '8', '--step-deadline-ms', '20000', ...args], { home, readyMs: 200_000 });
}

async function completeAll(api: string, model: string): Promise<string[]> {
  return Promise.all(
    prompts.map(async (prompt) => {
      const res = await fetch(`${api}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, prompt, max_tokens: 8, temperature: 0, ignore_eos: true }) });
      expect(res.status, await res.clone().text()).toBe(200);
      return ((await res.json()) as { choices: { text: string }[] }).choices[0]!.text;
    }),
  );
}

/** The prefill ranks' shared KV files (the CPU's peer memory, <AFD_HOME>/run/kv-share). */
function sharedFiles(): string[] {
  const dir = join(home, 'run', 'kv-share');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('afd-kv-')) : [];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function statsOf(url: string): Promise<RankStats> {
  return (await (await fetch(`${url}/afd/stats`)).json()) as RankStats;
}

async function waitFor<T>(what: string, read: () => Promise<T | null>, timeoutMs = 120_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await read().catch(() => null);
    if (v !== null) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('afd-agent launch with prefill ranks (wPxAyF)', () => {
  it('Qwen3-MoE: 2P1A1F and 1P2A2F equal colocated; transfers counted; a killed prefill rank is survived and restarted', async () => {
    const modelDir = join(home, 'tiny-qwen3-moe');
    await makeModel({ arch: 'qwen3_moe', preset: 'tiny', outDir: modelDir, configOnly: true });
    const colocated = await launch(modelDir, ['--topology', 'colocated']);
    const want = await completeAll(colocated.api, 'tiny-qwen3-moe');
    expect(await colocated.term()).toBe(0);

    const pd = await launch(modelDir, ['--topology', '2P1A1F']);
    expect([...pd.urls.keys()].sort()).toEqual(['attention 0', 'ffn 0', 'prefill 0', 'prefill 1']);
    expect(await completeAll(pd.api, 'tiny-qwen3-moe')).toEqual(want);
    const attn = await statsOf(pd.urls.get('attention 0')!);
    const links = attn.pd!.links;
    expect(links.map((l) => l.prefillRank)).toEqual([0, 1]);
    // One host: the KV is copied out of the prefill ranks' shared memory (only block ids on the wire).
    expect(links.map((l) => l.transport)).toEqual(['peer', 'peer']);
    expect(sharedFiles()).toHaveLength(2);
    expect(links.reduce((n, l) => n + l.transfers, 0)).toBe(prompts.length);
    expect(links.every((l) => l.transfers === 0 || (l.bytes > 0 && l.transferMs > 0))).toBe(true);
    const prefillStats = await Promise.all([0, 1].map((p) => statsOf(pd.urls.get(`prefill ${p}`)!)));
    expect(prefillStats.map((s) => [s.role, s.rank])).toEqual([
      ['prefill', 0],
      ['prefill', 1],
    ]);
    const served = prefillStats.map((s) => s.pd!.served);
    expect(served.reduce((n, s) => n + s.prefills, 0)).toBe(prompts.length);
    const metrics = await (await fetch(`${pd.urls.get('attention 0')!}/metrics`)).text();
    expect(metrics).toMatch(/afd:pd_kv_transfers_total\{prefill_rank="\d"\} [1-9]/);

    // A prefill rank killed: requests are still answered, with the same tokens, and the launch restarts it.
    process.kill(pd.pids.get('prefill 0')!, 'SIGKILL');
    expect(await completeAll(pd.api, 'tiny-qwen3-moe')).toEqual(want);
    const after = (await statsOf(pd.urls.get('attention 0')!)).pd!;
    expect(after.links.reduce((n, l) => n + l.transfers, 0) + (after.localPrefills['prefill_ranks_down'] ?? 0)).toBe(2 * prompts.length);
    await waitFor('prefill 0 restarted', async () => ((await (await fetch(`${pd.api}/metrics`)).text()).match(/afd:rank_restarts_total\{role="prefill",rank="0"\} 1/) ? true : null));
    // The killed rank's shared file was removed by its successor: one file per live prefill rank.
    const live = (f: string): boolean => isAlive(Number(/^afd-kv-(\d+)-/.exec(f)![1]));
    await waitFor('the restarted rank\'s shared KV file, and no other', async () => {
      const files = sharedFiles();
      return files.length === 2 && files.every(live) ? true : null;
    });
    await waitFor('prefill 0 serving again', async () => {
      await completeAll(pd.api, 'tiny-qwen3-moe');
      return (await statsOf(pd.urls.get('attention 0')!)).pd!.links[0]!.connected ? true : null;
    });
    expect(await pd.term()).toBe(0);
    expect(sharedFiles()).toEqual([]);

    // The bytes path, asked for: the same texts over TCP.
    const pd2 = await launch(modelDir, ['--topology', '1P2A2F', '--pd-transport', 'tcp']);
    expect(await completeAll(pd2.api, 'tiny-qwen3-moe')).toEqual(want);
    const transfers = await Promise.all([0, 1].map(async (a) => (await statsOf(pd2.urls.get(`attention ${a}`)!)).pd!.links[0]!.transfers));
    expect(transfers[0]! + transfers[1]!).toBe(prompts.length); // the front router spreads them over both attention ranks; each asks the one prefill rank
    expect((await statsOf(pd2.urls.get('attention 0')!)).pd!.links[0]!.transport).toBe('tcp');
    expect(sharedFiles()).toEqual([]);
    expect(await pd2.term()).toBe(0);
  }, 600_000);

  it('Qwen3-Next (Gated DeltaNet: the recurrent state moves with the blocks): 1P1A1F equals colocated', async () => {
    const modelDir = join(home, 'tiny-qwen3-next');
    await makeModel({ arch: 'qwen3_next', preset: 'tiny', outDir: modelDir, configOnly: true });
    const colocated = await launch(modelDir, ['--topology', 'colocated']);
    const want = await completeAll(colocated.api, 'tiny-qwen3-next');
    expect(await colocated.term()).toBe(0);
    const pd = await launch(modelDir, ['--topology', '1P1A1F']);
    expect(await completeAll(pd.api, 'tiny-qwen3-next')).toEqual(want);
    const link = (await statsOf(pd.urls.get('attention 0')!)).pd!.links[0]!;
    expect(link.transfers).toBe(prompts.length);
    expect(link.transport).toBe('peer'); // the state slot is pulled beside the blocks
    expect(await pd.term()).toBe(0);
  }, 400_000);

  it('DeepSeek-V2 (MLA latent cache): 1P1A1F equals colocated', async () => {
    const modelDir = join(home, 'tiny-deepseek');
    await makeModel({ arch: 'deepseek_v2', preset: 'tiny', outDir: modelDir, configOnly: true });
    const colocated = await launch(modelDir, ['--topology', 'colocated']);
    const want = await completeAll(colocated.api, 'tiny-deepseek');
    expect(await colocated.term()).toBe(0);
    const pd = await launch(modelDir, ['--topology', '1P1A1F']);
    expect(await completeAll(pd.api, 'tiny-deepseek')).toEqual(want);
    const link = (await statsOf(pd.urls.get('attention 0')!)).pd!.links[0]!;
    expect(link.transfers).toBe(prompts.length);
    expect(link.transport).toBe('peer');
    expect(await pd.term()).toBe(0);
  }, 400_000);
});
