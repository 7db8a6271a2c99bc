/**
 * Moving a sequence's KV blocks (and a hybrid model's recurrent-state slot) between engines
 * of one model (prefill / decode disaggregation; runtime/engine/kv-transfer.h): the byte
 * layout's size and round trip, a sequence continued on a second engine from the imported
 * blocks equal to the first engine continuing it (dense, MoE, MLA's latent cache, Gated
 * DeltaNet with its state slot), and the calls the engine refuses.
 */
import { describe, expect, it } from 'vitest';
import { nativeEngineOf, type Engine } from './engine.js';
import { relErr } from './testing/engineReference.js';
import { roleSpec, singleSeqPlan, writeTinyModel } from './testing/engineTesting.js';
import { runKvTransfer } from './testing/kvTransfer.js';
import { testEngines } from './testing/testEngines.js';

const blockSize = 4;
const numKvBlocks = 31;
const opts = { threads: 2, kvBlockSize: blockSize, numKvBlocks, numStateSlots: 4 };
const { load, dirs } = testEngines();
// 3 full blocks and a 2-token tail (token ids below every tiny vocabulary).
const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7];

async function engines(arch: string, count: number): Promise<Engine[]> {
  const dir = await writeTinyModel(arch, 5);
  dirs.push(dir);
  const spec = await roleSpec(dir, 'colocated');
  return Promise.all(Array.from({ length: count }, () => load(spec, opts)));
}

const ints = (...xs: number[]): Int32Array => Int32Array.from(xs);

describe('EngineInfo describes the KV layout a receiver checks', () => {
  it.each([
    // arch, layers with a paged cache, tensors per layer, bytes of one token of one tensor (f32)
    ['qwen3', 2, 2, 1 * 6 * 4],
    ['deepseek_v2', 3, 1, (14 + 4) * 4],
    ['qwen3_next', 2, 2, 2 * 8 * 4],
  ])('%s: kvNumLayers %i, kvTensorsPerLayer %i, kvRowBytes %i, kvDtype f32', async (arch, layers, tensors, rowBytes) => {
    const [e] = await engines(arch, 1);
    expect(e!.info).toMatchObject({ kvDtype: 'f32', kvNumLayers: layers, kvTensorsPerLayer: tensors, kvRowBytes: rowBytes });
    expect(e!.info.kvBytesPerBlock).toBe(layers * tensors * blockSize * rowBytes);
  });
});

describe.each(['qwen3', 'qwen3_moe', 'deepseek_v2', 'qwen3_next'])('KV transfer: %s', (arch) => {
  it('export, import into other block ids, export again: the same bytes (and the state slot likewise)', async () => {
    const [e] = await engines(arch, 1);
    const engine = e!;
    const blocks = [7, 3, 11, 4];
    await engine.step(singleSeqPlan(engine, { tokenIds: prompt, numCached: 0, blockTable: blocks, sample: false }, 1));
    const bytes = await engine.exportKvBlocks(Int32Array.from(blocks));
    const { kvNumLayers, kvTensorsPerLayer, kvRowBytes } = engine.info;
    expect(bytes.length).toBe(kvNumLayers * kvTensorsPerLayer * blocks.length * blockSize * kvRowBytes);
    expect(bytes.some((b) => b !== 0)).toBe(true);
    const others = ints(20, 21, 22, 13);
    await engine.importKvBlocks(others, bytes);
    expect(await engine.exportKvBlocks(others)).toEqual(bytes);
    // Block order within the call is the order of the bytes: one block's rows alone match its slice.
    const one = await engine.exportKvBlocks(ints(11));
    const per = blockSize * kvRowBytes;
    expect(one.subarray(0, per)).toEqual(bytes.subarray(2 * per, 3 * per));
    if (engine.info.numStateSlots > 0) {
      const state = await engine.exportStateSlot(1);
      expect(state.length).toBe(engine.info.stateBytesPerSlot);
      expect(state.some((b) => b !== 0)).toBe(true);
      await engine.importStateSlot(3, state);
      expect(await engine.exportStateSlot(3)).toEqual(state);
    }
  });

  it('engine B continues the sequence from A\'s imported full blocks as A does (tokens equal, logits 1e-5); without the import it does not', async () => {
    const [a, b] = await engines(arch, 2);
    const run = await runKvTransfer(a!, b!, prompt, blockSize, 8);
    expect(run.movedTokens).toBe(12);
    expect(run.kvBytes).toBe(3 * a!.info.kvBytesPerBlock);
    expect(run.stateBytes).toBe(a!.info.stateBytesPerSlot);
    expect(run.b.tokens).toEqual(run.a.tokens);
    run.a.logits.forEach((row, i) => expect(relErr(run.b.logits[i]!, row), `step ${i}`).toBeLessThan(1e-5));
    // The control read zeros where the import would have put A's KV (and state).
    expect(relErr(run.control.logits[0]!, run.a.logits[0]!)).toBeGreaterThan(1e-3);
  });
});

describe('KV transfer refusals name the problem', () => {
  it('block ids out of range, listed twice, or not an Int32Array; data of the wrong length', async () => {
    const [e] = await engines('qwen3', 1);
    const engine = e!;
    await expect(engine.exportKvBlocks(ints(0, numKvBlocks))).rejects.toThrow(/exportKvBlocks: blockIds\[1\] = 31 is outside \[0, 31\)/);
    await expect(engine.exportKvBlocks(ints(-1))).rejects.toThrow(/blockIds\[0\] = -1 is outside \[0, 31\)/);
    await expect(engine.exportKvBlocks(ints(2, 5, 2))).rejects.toThrow(/exportKvBlocks: blockIds lists block 2 twice \(at 0 and 2\)/);
    await expect(engine.importKvBlocks(ints(4, 4), new Uint8Array(2 * engine.info.kvBytesPerBlock))).rejects.toThrow(/importKvBlocks: blockIds lists block 4 twice/);
    await expect(engine.importKvBlocks(ints(40), new Uint8Array(engine.info.kvBytesPerBlock))).rejects.toThrow(/importKvBlocks: blockIds\[0\] = 40 is outside/);
    const expected = 2 * engine.info.kvBytesPerBlock;
    await expect(engine.importKvBlocks(ints(1, 2), new Uint8Array(10))).rejects.toThrow(new RegExp(`importKvBlocks: data has 10 bytes, expected ${expected}`));
    await expect(engine.exportKvBlocks([1, 2] as unknown as Int32Array)).rejects.toThrow(/blockIds must be an Int32Array/);
    await expect(engine.importKvBlocks(ints(1), [0] as unknown as Uint8Array)).rejects.toThrow(/data must be a Uint8Array/);
    // The native guards too, below the wrapper's.
    await expect(nativeEngineOf(engine).exportKvBlocks([1] as unknown as Int32Array)).rejects.toThrow(/blockIds must be an Int32Array/);
    expect(await engine.exportKvBlocks(ints())).toHaveLength(0);
  });

  it('state slots: refused on a model without them, out of range, or of the wrong length', async () => {
    const [dense] = await engines('qwen3', 1);
    await expect(dense!.exportStateSlot(0)).rejects.toThrow(/exportStateSlot: the model \(qwen3\) has no linear-attention \(gdn\) layer/);
    await expect(dense!.importStateSlot(0, new Uint8Array(4))).rejects.toThrow(/importStateSlot: the model \(qwen3\) has no linear-attention/);
    const [hybrid] = await engines('qwen3_next', 1);
    await expect(hybrid!.exportStateSlot(4)).rejects.toThrow(/exportStateSlot: slot 4 is outside \[0, 4\)/);
    await expect(hybrid!.importStateSlot(-1, new Uint8Array(hybrid!.info.stateBytesPerSlot))).rejects.toThrow(/importStateSlot: slot -1 is outside \[0, 4\)/);
    await expect(hybrid!.importStateSlot(0, new Uint8Array(3))).rejects.toThrow(
      new RegExp(`importStateSlot: data has 3 bytes, expected ${hybrid!.info.stateBytesPerSlot}`),
    );
    await expect(hybrid!.exportStateSlot(1.5)).rejects.toThrow(/slot must be an integer/);
  });

  it('an ffn-role engine (no KV cache) and a closed engine', async () => {
    const dir = await writeTinyModel('qwen3_moe', 5);
    dirs.push(dir);
    const ffn = await load(await roleSpec(dir, 'ffn'), opts);
    expect(ffn.info.kvDtype).toBe('');
    await expect(ffn.exportKvBlocks(ints(0))).rejects.toThrow(/exportKvBlocks: an ffn-role engine has no KV cache/);
    await expect(ffn.importStateSlot(0, new Uint8Array(0))).rejects.toThrow(/importStateSlot: an ffn-role engine/);
    await expect(nativeEngineOf(ffn).exportKvBlocks(ints(0))).rejects.toThrow(/exportKvBlocks: an engine with role ffn has no KV cache/);
    const [closed] = await engines('qwen3', 1);
    closed!.close();
    await expect(closed!.exportKvBlocks(ints(0))).rejects.toThrow(/exportKvBlocks: the engine is closed/);
  });
});
