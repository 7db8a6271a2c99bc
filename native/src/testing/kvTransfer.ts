/**
 * Test helper: a sequence moved between two engines of one model (prefill / decode
 * disaggregation). Engine A prefills the prompt's full blocks into its blocks (and, for a
 * model with gdn layers, its state slot), exports them, then continues the sequence itself;
 * engine B imports them into other block ids (and another slot), computes only the prompt's
 * tail and decodes. B must generate what A did. The control run on B reads blocks and a slot
 * that nothing was imported into, so a transfer that moved nothing would be caught.
 */
import type { Engine } from '../engine.js';
import { generateGreedy, singleSeqPlan } from './engineTesting.js';

export interface KvTransferRun {
  /** A continuing the sequence it prefilled. */
  a: { tokens: number[]; logits: Float32Array[] };
  /** B continuing from the imported blocks (and state slot). */
  b: { tokens: number[]; logits: Float32Array[] };
  /** B continuing from blocks and a slot without an import (zeros). */
  control: { tokens: number[]; logits: Float32Array[] };
  /** Prompt tokens whose KV moved (the full blocks), and the bytes exported. */
  movedTokens: number;
  kvBytes: number;
  stateBytes: number;
}

/**
 * How the prompt's full blocks (and state slot) go from A to B: B's blocks `dst` (and slot)
 * hold A's `src` (and slot) when it resolves. Returns the bytes moved.
 */
export type KvMover = (a: Engine, b: Engine, src: number[], dst: number[], slots: [number, number] | null) => Promise<{ kvBytes: number; stateBytes: number }>;

/** Through bytes in this process (exportKvBlocks / importKvBlocks). */
export const moveByBytes: KvMover = async (a, b, src, dst, slots) => {
  const kv = await a.exportKvBlocks(Int32Array.from(src));
  const state = slots ? await a.exportStateSlot(slots[0]) : new Uint8Array(0);
  await b.importKvBlocks(Int32Array.from(dst), kv);
  if (slots) await b.importStateSlot(slots[1], state);
  return { kvBytes: kv.length, stateBytes: state.length };
};

/** By peer memory: B maps A's shared KV (A loaded kvShareable) and pulls the blocks. */
export const moveByPeer: KvMover = async (a, b, src, dst, slots) => {
  await a.kvFence();
  const descriptor = a.kvShareDescriptor();
  if (!descriptor) throw new Error('moveByPeer: engine A was not loaded with kvShareable');
  const peer = await b.openKvPeer(descriptor);
  try {
    await b.pullKvBlocks(peer, Int32Array.from(src), Int32Array.from(dst));
    if (slots) await b.pullStateSlot(peer, slots[0], slots[1]);
  } finally {
    b.closeKvPeer(peer);
  }
  return { kvBytes: src.length * a.info.kvBytesPerBlock, stateBytes: slots ? a.info.stateBytesPerSlot : 0 };
};

/** Ids [first, first + stride, ...) of `count` blocks. */
const ids = (count: number, first: number, stride: number): number[] => Array.from({ length: count }, (_, i) => first + i * stride);

/**
 * Runs the transfer from `a` to `b` by `move` (one model, kvBlockSize `blockSize`, at least
 * 3 x perSeq + 2 KV blocks with perSeq = ceil((prompt + maxNewTokens) / blockSize), 4 state
 * slots on a gdn model): the prompt's floor(len / blockSize) full
 * blocks move, the prompt's length must not be a multiple of blockSize.
 */
export async function runKvTransfer(a: Engine, b: Engine, prompt: readonly number[], blockSize: number, maxNewTokens = 8, move: KvMover = moveByBytes): Promise<KvTransferRun> {
  const full = Math.floor(prompt.length / blockSize);
  const moved = full * blockSize;
  if (full === 0 || moved === prompt.length) throw new Error('runKvTransfer: the prompt needs a full block and a tail');
  const perSeq = Math.ceil((prompt.length + maxNewTokens) / blockSize);
  const blocksA = ids(perSeq, 1, 2); // odd ids on A
  const blocksB = ids(perSeq, 2, 2); // even ids on B: the import lands elsewhere than A's
  const blocksC = ids(perSeq, 2 * perSeq + 2, 1); // B's control: blocks nothing was written to
  const [slotA, slotB, slotC] = [1, 2, 3];
  const gdn = a.info.numStateSlots > 0;

  // A: the full blocks only (the state slot then holds exactly those tokens), moved into B's
  // blocks before A goes on (A's decoding changes its state slot).
  await a.step(singleSeqPlan(a, { tokenIds: prompt.slice(0, moved), numCached: 0, blockTable: blocksA, sample: false }, slotA));
  const { kvBytes, stateBytes } = await move(a, b, blocksA.slice(0, full), blocksB.slice(0, full), gdn ? [slotA, slotB] : null);
  const fromA = await generateGreedy(a, prompt, maxNewTokens, { blocks: blocksA, start: moved, stateSlot: slotA });

  const control = await generateGreedy(b, prompt, maxNewTokens, { blocks: blocksC, start: moved, stateSlot: slotC });
  const fromB = await generateGreedy(b, prompt, maxNewTokens, { blocks: blocksB, start: moved, stateSlot: slotB });
  return { a: fromA, b: fromB, control, movedTokens: moved, kvBytes, stateBytes };
}
