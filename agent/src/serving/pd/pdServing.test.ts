/**
 * Prefill/decode disaggregation through the serving engines and the real TCP transport:
 * prefill ranks (ServingEngine.prefillOnly behind PrefillHost and KvTransferServer) compute a
 * prompt's full blocks, the decode rank (RemotePrefiller) writes them into held blocks and
 * continues. The fake engines check every KV read by content (the writer's position, token
 * and history) and every continued recurrent state, so imported KV that is wrong, short or
 * misplaced fails the step; outputs must equal a rank that computes everything itself.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { tokenIdsOf } from '../testing/handleTokens.js';
import type { GenerateParams } from '../ServingEngine.js';
import { KvTransferClient } from './KvTransferClient.js';
import { firstPositions, greedy, log, pdRanks, run, story, tapSink, type Cleanups, type Fixture } from './testing/pdRanks.js';

const ids = tokenIdsOf;
const cleanups: Cleanups = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

// Every scenario over both transports: bytes over TCP, and the fakes' peer memory (block ids on the wire).
describe.each(['tcp', 'auto'] as const)('transport %s', (transport) => {
const { fakeRank, prefillRank, decodeRank } = pdRanks(cleanups, transport);
const viaPeer = transport !== 'tcp';

describe('prefill/decode disaggregation (fake engines that check every KV read)', () => {
  it('a decode rank continues from the prefill rank KV and samples what a rank computing everything samples', async () => {
    const p = await prefillRank(0);
    const d = decodeRank([{ rank: 0, port: p.port }]);
    const local = fakeRank();
    for (const len of [9, 16, 17, 23, story.length]) {
      const params: GenerateParams = { promptIds: story.slice(0, len), sampling: { ...greedy, seed: 1 }, maxTokens: 7 };
      const want = await run(local.serving, params);
      d.engine.plans = [];
      expect(await run(d.serving, params), `prompt of ${len}`).toEqual(want);
      const imported = Math.floor((len - 1) / 4) * 4;
      expect(firstPositions(d.engine)[0], `prompt of ${len}: the decode rank computed from token ${imported}`).toBe(imported);
    }
    expect(d.counts.transfers.map((t) => t.tokens)).toEqual([8, 12, 16, 20, Math.floor((story.length - 1) / 4) * 4]);
    expect(d.counts.transfers.every((t) => t.prefillRank === 0 && t.bytes === (t.tokens * 20) && t.transferMs > 0 && t.transport === (viaPeer ? 'peer' : 'tcp'))).toBe(true);
    expect(p.server.stats().heldPeerJobs).toBe(0);
    expect(d.counts.local).toEqual([]);
    // Every block comes back on both sides (the parked prefills were released once sent).
    expect(p.serving.scheduler.blocks.numUsedBlocks).toBe(0);
    expect(d.serving.scheduler.blocks.owners()).toEqual([]);
    expect(d.serving.scheduler.imports.size).toBe(0);
  });

  it.skipIf(viaPeer)('a long prompt prefilled in chunks: its first blocks go out while the later chunks run', async () => {
    const whileRunning: boolean[] = [];
    let prefill: Fixture | null = null;
    const p = await prefillRank(0, {}, (service) => ({
      prefill: (job, sink, signal) => service.prefill(job, { ...sink, blocks: (off, n, data) => (whileRunning.push(prefill!.serving.scheduler.numRunning > 0), sink.blocks(off, n, data)) }, signal),
    }));
    prefill = p;
    const d = decodeRank([{ rank: 0, port: p.port }]);
    const long = [...story, ...story, ...story]; // ~100 tokens: chunks of 24 on the prefill rank
    const params: GenerateParams = { promptIds: long, sampling: greedy, maxTokens: 4 };
    expect(await run(d.serving, params)).toEqual(await run(fakeRank().serving, params));
    expect(whileRunning.length).toBe(Math.ceil(Math.floor((long.length - 1) / 4) / 2)); // chunks of 2 blocks, each once
    expect(whileRunning.filter(Boolean).length).toBeGreaterThan(0);
    expect(whileRunning.at(-1)).toBe(false); // the tail goes once the prompt is done
  });

  it('prefills preempted on a full prefill rank still send every block once, with the right KV', async () => {
    const p = await prefillRank(0, { numKvBlocks: 40 });
    const d = decodeRank([{ rank: 0, port: p.port }]);
    const local = fakeRank();
    const prompts = [0, 1, 2].map((k) => [...story.slice(k), ...story, ...story.slice(0, 40)]);
    const params = prompts.map((promptIds): GenerateParams => ({ promptIds, sampling: greedy, maxTokens: 3 }));
    const want = await Promise.all(params.map((q) => run(local.serving, q)));
    expect(await Promise.all(params.map((q) => run(d.serving, q)))).toEqual(want);
    expect(p.serving.scheduler.numPreemptions).toBeGreaterThan(0);
    expect(d.counts.transfers).toHaveLength(3);
    expect(p.serving.scheduler.blocks.numUsedBlocks).toBe(0);
  });

  it('n samples share the imported blocks; seeded sampling equals the local run; usage counts the prefill rank hits as cached', async () => {
    const p = await prefillRank(0);
    const d = decodeRank([{ rank: 0, port: p.port }]);
    const local = fakeRank();
    const params: GenerateParams = { promptIds: story, sampling: { temperature: 1, topK: 0, topP: 1, seed: 7 }, maxTokens: 6, n: 3 };
    expect(await run(d.serving, params)).toEqual(await run(local.serving, params));
    expect(d.counts.transfers).toHaveLength(1);
    // The same prompt again: the prefill rank finds it in its prefix cache (all but its last block).
    const [h] = await d.serving.submitAllAsync([{ ...params, n: 1 }]);
    let cached = -1;
    for await (const e of h!.events) if (e.type === 'done') cached = e.cachedTokens;
    expect(h!.pdTransfer?.cachedTokens).toBeGreaterThan(0);
    expect(cached).toBe(h!.pdTransfer!.cachedTokens);
    expect(d.serving.scheduler.blocks.owners()).toEqual([]);
  });

  it('a hybrid model moves its recurrent state with the blocks (state slots checked by the fake engine)', async () => {
    const p = await prefillRank(0, { numStateSlots: 8 });
    const d = decodeRank([{ rank: 0, port: p.port }], { numStateSlots: 8 });
    const local = fakeRank({ numStateSlots: 8 });
    const params: GenerateParams = { promptIds: story, sampling: { ...greedy, seed: 3 }, maxTokens: 8 };
    expect(await run(d.serving, params)).toEqual(await run(local.serving, params));
    expect(d.counts.transfers).toHaveLength(1);
    expect(d.counts.transfers[0]!.bytes).toBe(d.counts.transfers[0]!.tokens * 20 + 16);
    // n > 1 on such a model: one imported state cannot serve n samples; prefilled here.
    expect(await run(d.serving, { ...params, n: 2 })).toEqual(await run(local.serving, { ...params, n: 2 }));
    expect(d.counts.local).toEqual(['samples_with_state']);
    expect(d.serving.scheduler.stateSlots!.numTaken).toBe(0);
    expect(p.serving.scheduler.stateSlots!.numTaken).toBe(0);
  });

  it('short prompts and prompt logprobs stay local; a prefix this rank caches stays local', async () => {
    const p = await prefillRank(0);
    const d = decodeRank([{ rank: 0, port: p.port }], {}, true);
    const local = fakeRank();
    const short: GenerateParams = { promptIds: story.slice(0, 6), sampling: greedy, maxTokens: 3 };
    expect(await run(d.serving, short)).toEqual(await run(local.serving, short));
    const withRows: GenerateParams = { promptIds: story, sampling: greedy, maxTokens: 3, promptLogprobs: 1 };
    expect(await run(d.serving, withRows)).toEqual(await run(local.serving, withRows));
    const long: GenerateParams = { promptIds: story, sampling: greedy, maxTokens: 3 };
    expect(await run(d.serving, long)).toEqual(await run(local.serving, long));
    expect(d.counts.local).toEqual(['short', 'prompt_logprobs', 'cached_here']); // the third: the second request cached the prompt here
  });
});

describe('prefill/decode faults', () => {
  it('no prefill rank up: prefilled here, same tokens', async () => {
    const p = await prefillRank(0);
    await p.server.close();
    const d = decodeRank([{ rank: 0, port: p.port }]);
    const local = fakeRank();
    const params: GenerateParams = { promptIds: story, sampling: greedy, maxTokens: 5 };
    expect(await run(d.serving, params)).toEqual(await run(local.serving, params));
    expect(d.counts.local).toEqual(['prefill_ranks_down']);
    expect(d.serving.scheduler.blocks.owners()).toEqual([]);
  });

  it('a prefill rank lost mid-transfer: its hold is freed and another prefill rank serves the request', async () => {
    let dropped = false;
    const flaky = await prefillRank(0, {}, (service, server) => ({
      prefill: async (job, sink, signal) =>
        service.prefill(
          job,
          tapSink(sink, async () => {
            if (!dropped) {
              dropped = true;
              await server().close(); // dies after its first chunk
            }
          }),
          signal,
        ),
    }));
    const good = await prefillRank(1);
    const d = decodeRank([
      { rank: 0, port: flaky.port },
      { rank: 1, port: good.port },
    ]);
    const local = fakeRank();
    // Find a prompt whose rendezvous choice is the flaky rank (rank 0 first), then send it.
    let params: GenerateParams | null = null;
    for (let s = 0; s < 40 && !params; s++) {
      const candidate: GenerateParams = { promptIds: [...story.slice(s), ...story.slice(0, s)], sampling: greedy, maxTokens: 5 };
      const order = d.prefiller.prefillRankOrder(candidate.promptIds, 4);
      if (order[0]!.rank === 0) params = candidate;
    }
    expect(params).not.toBeNull();
    expect(await run(d.serving, params!)).toEqual(await run(local.serving, params!));
    expect(dropped).toBe(true);
    expect(d.counts.lost).toEqual([0]);
    expect(d.counts.transfers.map((t) => [t.prefillRank, t.retries])).toEqual([[1, 1]]);
    expect(d.serving.scheduler.blocks.owners()).toEqual([]);
    expect(d.serving.scheduler.imports.size).toBe(0);
  });

  it('a decode rank gone mid-transfer: the prefill rank frees the blocks it held for it', async () => {
    let client: KvTransferClient | null = null;
    const p = await prefillRank(0, {}, (service) => ({
      prefill: async (job, sink, signal) => service.prefill(job, tapSink(sink, () => void client?.close()), signal), // the decode side goes away after the first chunk
    }));
    const kv = fakeRank().engine.kvTransfer;
    client = new KvTransferClient({ host: '127.0.0.1', port: p.port, launchId: 'pd-test', rank: 0, log, transport, peer: { engine: kv.peer!, layout: kv.kvLayout } });
    await client.connect();
    expect(client.transport).toBe(viaPeer ? 'peer' : 'tcp');
    const layout = client.layout!;
    const numBlocks = Math.floor((story.length - 1) / layout.blockSize);
    const got = client.prefill({ id: 'gone', tokenIds: story, numBlocks }, { onBlocks: () => undefined, onState: () => undefined, onBlockRefs: () => undefined, onStateRef: () => undefined });
    await expect(got).rejects.toThrow(/was closed/);
    for (let t = 0; t < 100 && (p.serving.scheduler.blocks.numUsedBlocks > 0 || p.server.stats().inFlight > 0); t++) await new Promise((r) => setTimeout(r, 20));
    expect(p.serving.scheduler.blocks.numUsedBlocks).toBe(0);
    expect(p.server.stats().inFlight).toBe(0);
  });

  it('a prefill that fails on the prefill rank (its KV cache is too small) is prefilled here', async () => {
    const p = await prefillRank(0, { numKvBlocks: 3 });
    const d = decodeRank([{ rank: 0, port: p.port }]);
    const local = fakeRank();
    const params: GenerateParams = { promptIds: story, sampling: greedy, maxTokens: 4 };
    expect(await run(d.serving, params)).toEqual(await run(local.serving, params));
    expect(d.counts.local).toEqual(['prefill_failed']);
  });

  it('a prefill rank whose KV layout differs (block size) is not used, with the reason', async () => {
    const p = await prefillRank(0, { kvBlockSize: 8 });
    const d = decodeRank([{ rank: 0, port: p.port }]);
    const params: GenerateParams = { promptIds: story, sampling: greedy, maxTokens: 4 };
    expect(await run(d.serving, params)).toEqual(await run(fakeRank().serving, params));
    expect(d.counts.local).toEqual(['layout_mismatch']);
  });

  it('no free blocks to hold: prefilled here', async () => {
    const p = await prefillRank(0);
    const d = decodeRank([{ rank: 0, port: p.port }], { numKvBlocks: 12 });
    // Hold most of the cache so the import cannot get its blocks.
    const taken = d.serving.scheduler.holdForImport(9)!; // 3 blocks left: the 4 to hold do not fit
    const params: GenerateParams = { promptIds: story.slice(0, 17), sampling: greedy, maxTokens: 3 };
    const want = await run(fakeRank({ numKvBlocks: 12 }).serving, params);
    const [h] = await d.serving.submitAllAsync([params]);
    expect(d.counts.local).toEqual(['no_free_blocks']);
    d.serving.scheduler.imports.release(taken); // room again: the request runs here
    expect(await ids(h!)).toEqual(want[0]);
    expect(d.serving.scheduler.blocks.owners()).toEqual([]);
  });
});
});
