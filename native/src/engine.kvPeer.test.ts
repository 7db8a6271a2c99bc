/**
 * Prefill / decode disaggregation by peer memory (runtime/engine/kv-peer.h) on the CPU: the
 * KV cache and recurrent state of an engine loaded kvShareable live in one file mapped
 * shared, which another engine maps (openKvPeer) and pulls blocks and a state slot from.
 * Engine B continues a sequence from A's pulled blocks as A does (dense, MoE, MLA's latent
 * cache, Gated DeltaNet with its state); the shared file goes with its engine; a stale file
 * of a killed process is removed; and the calls the engine refuses name the problem.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Engine } from './engine.js';
import { relErr } from './testing/engineReference.js';
import { roleSpec, singleSeqPlan, writeTinyModel } from './testing/engineTesting.js';
import { moveByPeer, runKvTransfer } from './testing/kvTransfer.js';
import { testEngines } from './testing/testEngines.js';

const blockSize = 4;
const numKvBlocks = 31;
const { load, dirs } = testEngines();
const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7];
const shareDirs: string[] = [];
afterAll(() => Promise.all(shareDirs.map((d) => rm(d, { recursive: true, force: true }))));

async function shareDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'afd-kvpeer-'));
  shareDirs.push(dir);
  return dir;
}

/** A (shared, in `dir`) and B (not shared) engines of one tiny model. */
async function pair(arch: string, dir: string, blocks = numKvBlocks): Promise<[Engine, Engine]> {
  const model = await writeTinyModel(arch, 5);
  dirs.push(model);
  const spec = await roleSpec(model, 'colocated');
  const opts = { threads: 2, kvBlockSize: blockSize, numKvBlocks: blocks, numStateSlots: 4 };
  return [await load(spec, { ...opts, kvShareable: true, kvShareDir: dir }), await load(spec, opts)];
}

describe.each(['qwen3', 'qwen3_moe', 'deepseek_v2', 'qwen3_next'])('KV by peer memory: %s', (arch) => {
  it('B continues the sequence from blocks (and the state slot) pulled out of A\'s shared cache as A does; the control does not', async () => {
    const dir = await shareDir();
    const [a, b] = await pair(arch, dir);
    const d = a.kvShareDescriptor()!;
    expect(d.kind).toBe('cpu');
    expect(d.numKvBlocks).toBe(numKvBlocks);
    expect(d.kvBytes).toBe(numKvBlocks * a.info.kvBytesPerBlock);
    expect(d.stateBytes).toBe(a.info.numStateSlots * a.info.stateBytesPerSlot);
    expect(d.state === null).toBe(a.info.numStateSlots === 0);
    expect(b.kvShareDescriptor()).toBeNull();
    const run = await runKvTransfer(a, b, prompt, blockSize, 8, moveByPeer);
    expect(run.movedTokens).toBe(12);
    expect(run.b.tokens).toEqual(run.a.tokens);
    run.a.logits.forEach((row, i) => expect(relErr(run.b.logits[i]!, row), `step ${i}`).toBeLessThan(1e-5));
    expect(relErr(run.control.logits[0]!, run.a.logits[0]!)).toBeGreaterThan(1e-3);
    // The pulled blocks hold A's bytes exactly.
    expect(await b.exportKvBlocks(Int32Array.from([2, 4, 6]))).toEqual(await a.exportKvBlocks(Int32Array.from([1, 3, 5])));
  });
});

describe('pulls run beside a step in flight', () => {
  it('a fence and pulls into blocks no step holds complete while B runs a long step, which they leave as it was', async () => {
    const dir = await shareDir();
    const [a, b] = await pair('qwen3', dir, 400);
    const peer = await b.openKvPeer(a.kvShareDescriptor()!);
    // B's step: a long prompt over blocks 16..; the pulls write blocks 1..3 only.
    const long = Array.from({ length: 1500 }, (_, i) => (i * 7) % 50);
    const table = Array.from({ length: 375 }, (_, i) => 16 + i);
    const plan = () => singleSeqPlan(b, { tokenIds: long, numCached: 0, blockTable: table, sample: true });
    const alone = await b.step(plan());
    let stepDone = false;
    const inFlight = b.step(plan()).then((r) => {
      stepDone = true;
      return r;
    });
    let beside = 0;
    while (!stepDone && beside < 1000) {
      await a.kvFence();
      await b.pullKvBlocks(peer, Int32Array.from([1, 2, 3]), Int32Array.from([1, 2, 3]));
      if (!stepDone) beside++;
    }
    const during = await inFlight;
    // Hundreds finish beside the step here. Behind the step mutex at most the one or two that
    // reached the engine before the step did could (measured: 0 to 2).
    expect(beside).toBeGreaterThanOrEqual(10);
    expect(during.tokenIds).toEqual(alone.tokenIds);
    expect(relErr(during.logits!, alone.logits!)).toBe(0);
  });
});

describe('the shared file', () => {
  it('lives in kvShareDir while its engine does, and goes with it; a killed process\'s file is removed by the next engine', async () => {
    const dir = await shareDir();
    const stale = join(dir, 'afd-kv-2147483646-abcdef');
    await writeFile(stale, 'left by a killed rank');
    const [a, b] = await pair('qwen3', dir);
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(new RegExp(`^afd-kv-${process.pid}-`));
    expect(Buffer.from(a.kvShareDescriptor()!.kv).toString()).toBe(join(dir, files[0]!));
    b.close();
    a.close();
    expect(await readdir(dir)).toEqual([]);
  });

  it('a kvShareDir that does not exist is refused at load, naming it', async () => {
    const model = await writeTinyModel('qwen3', 5);
    dirs.push(model);
    await expect(load(await roleSpec(model, 'colocated'), { threads: 1, kvBlockSize: blockSize, numKvBlocks, kvShareable: true, kvShareDir: '/nonexistent/afd' })).rejects.toThrow(
      /cannot create the shared KV file in \/nonexistent\/afd \(kvShareDir\)/,
    );
  });
});

describe('peer refusals name the problem', () => {
  it('another layout, a gone peer, a wrong kind, bad ids and unknown peers', async () => {
    const dir = await shareDir();
    const [a, b] = await pair('qwen3', dir);
    const d = a.kvShareDescriptor()!;
    await expect(b.openKvPeer({ ...d, kind: 'cuda' })).rejects.toThrow(/openKvPeer: the peer's KV is cuda memory; this cpu engine maps cpu/);
    await expect(b.openKvPeer({ ...d, kvBytes: d.kvBytes - 1 })).rejects.toThrow(/is not whole blocks of this engine's layout/);
    await expect(b.openKvPeer({ ...d, kv: Buffer.from('/nonexistent/afd-kv') })).rejects.toThrow(/cannot open the peer's shared KV file \/nonexistent\/afd-kv/);
    const [hybrid] = await pair('qwen3_next', await shareDir());
    await expect(hybrid.openKvPeer(d)).rejects.toThrow(/(not whole blocks|keeps recurrent state but the peer shares none)/);
    const peer = await b.openKvPeer(d);
    await expect(b.pullKvBlocks(peer, Int32Array.from([1, 2]), Int32Array.from([3]))).rejects.toThrow(/2 source ids but 1 destination ids/);
    await expect(b.pullKvBlocks(peer, Int32Array.from([31]), Int32Array.from([3]))).rejects.toThrow(/pullKvBlocks \(source\): blockIds\[0\] = 31 is outside \[0, 31\)/);
    await expect(b.pullKvBlocks(peer, Int32Array.from([1, 2]), Int32Array.from([3, 3]))).rejects.toThrow(/pullKvBlocks \(destination\): blockIds lists block 3 twice/);
    await expect(b.pullStateSlot(peer, 0, 0)).rejects.toThrow(/pullStateSlot: the model \(qwen3\) has no linear-attention/);
    await expect(b.pullKvBlocks(peer + 100, Int32Array.from([1]), Int32Array.from([1]))).rejects.toThrow(/no open KV peer/);
    b.closeKvPeer(peer);
    await expect(b.pullKvBlocks(peer, Int32Array.from([1]), Int32Array.from([1]))).rejects.toThrow(/no open KV peer/);
    // The peer's file is gone once A closes: a new mapping fails with the reason.
    a.close();
    await expect(b.openKvPeer(d)).rejects.toThrow(/cannot open the peer's shared KV file .*No such file/);
  });
});
