/**
 * GPU suite group `kvpeer`: a sequence moved between CUDA engines of two processes by peer
 * memory (runtime/engine/kv-peer.h: CUDA IPC; it cannot be opened inside the process that
 * exported it, so engine A runs in a child: this bundle again, with AFD_KV_PEER_CHILD set).
 *
 * The child loads A kvShareable, prefills the prompt's full blocks, fences, and prints its
 * descriptor; the suite's engine B maps it and pulls the blocks (and the state slot) into its
 * own ids, tells the child, which then decodes on; B decodes from the pulled blocks. Greedy
 * tokens equal and logits within the bf16 tolerance pass; B's control (blocks and a slot
 * nothing was pulled into) must differ, so a pull that moved nothing fails.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { KvShareDescriptor } from '../../addon.js';
import { Engine } from '../../engine.js';
import { generateGreedy, roleSpec, singleSeqPlan } from '../engineTesting.js';
import { worstRelError } from './enginePair.js';
import { cudaLogitTolerance, type GpuCheck } from './gpuCheck.js';
import { perTransferModel } from './kvTransferCheck.js';

const opts = { backend: 'cuda' as const, kvBlockSize: 4, numKvBlocks: 31, numStateSlots: 4 };
const prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7];
const maxNewTokens = 8;
const full = Math.floor(prompt.length / opts.kvBlockSize);
const moved = full * opts.kvBlockSize;
const blocksA = Array.from({ length: 6 }, (_, i) => 1 + 2 * i);
const blocksB = Array.from({ length: 6 }, (_, i) => 2 + 2 * i);
const blocksC = Array.from({ length: 6 }, (_, i) => 14 + i);
const [slotA, slotB, slotC] = [1, 2, 3];

interface WireDescriptor extends Omit<KvShareDescriptor, 'kv' | 'state'> {
  kv: string;
  state: string | null;
}
const toWire = (d: KvShareDescriptor): WireDescriptor => ({ ...d, kv: Buffer.from(d.kv).toString('base64'), state: d.state ? Buffer.from(d.state).toString('base64') : null });
const fromWire = (d: WireDescriptor): KvShareDescriptor => ({ ...d, kv: Buffer.from(d.kv, 'base64'), state: d.state ? Buffer.from(d.state, 'base64') : null });

/** The child's side (gpuSuiteMain calls it when AFD_KV_PEER_CHILD names a model directory). */
export async function kvPeerChild(modelDir: string): Promise<void> {
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const a = await Engine.load(await roleSpec(modelDir, 'colocated'), { ...opts, kvShareable: true });
  try {
    await a.step(singleSeqPlan(a, { tokenIds: prompt.slice(0, moved), numCached: 0, blockTable: blocksA, sample: false }, slotA));
    await a.kvFence();
    process.stdout.write(`${JSON.stringify({ descriptor: toWire(a.kvShareDescriptor()!) })}\n`);
    await lines.next(); // the parent pulled: A may decode on (its state slot changes)
    const fromA = await generateGreedy(a, prompt, maxNewTokens, { blocks: blocksA, start: moved, stateSlot: slotA });
    process.stdout.write(`${JSON.stringify({ tokens: fromA.tokens, logits: fromA.logits.map((r) => Array.from(r)) })}\n`);
    await lines.next(); // the parent is done with A's memory
  } finally {
    a.close();
  }
}

async function peerCheck(arch: string, dir: string): Promise<GpuCheck> {
  const child = spawn(process.execPath, [process.argv[1]!], { env: { ...process.env, AFD_KV_PEER_CHILD: dir }, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextLine = async <T>(what: string): Promise<T> => {
    const r = await lines.next();
    if (r.done) throw new Error(`the peer process exited (code ${await exited}) before ${what}`);
    return JSON.parse(r.value) as T;
  };
  const b = await Engine.load(await roleSpec(dir, 'colocated'), opts);
  try {
    const { descriptor } = await nextLine<{ descriptor: WireDescriptor }>('its descriptor');
    const peer = await b.openKvPeer(fromWire(descriptor));
    await b.pullKvBlocks(peer, Int32Array.from(blocksA.slice(0, full)), Int32Array.from(blocksB.slice(0, full)));
    if (b.info.numStateSlots > 0) await b.pullStateSlot(peer, slotA, slotB);
    child.stdin.write('pulled\n');
    const a = await nextLine<{ tokens: number[]; logits: number[][] }>("A's decode");
    b.closeKvPeer(peer);
    child.stdin.end('done\n');
    const aLogits = a.logits.map((r) => Float32Array.from(r));
    const control = await generateGreedy(b, prompt, maxNewTokens, { blocks: blocksC, start: moved, stateSlot: slotC });
    const fromB = await generateGreedy(b, prompt, maxNewTokens, { blocks: blocksB, start: moved, stateSlot: slotB });
    const worst = worstRelError(fromB.logits, aLogits);
    const controlErr = worstRelError(control.logits.slice(0, 1), aLogits.slice(0, 1));
    const same = fromB.tokens.join(',') === a.tokens.join(',');
    const state = b.info.numStateSlots > 0 ? ' and its state slot' : '';
    return {
      suite: 'engine',
      name: `${arch}: CUDA engine B in another process pulls ${moved} tokens of KV${state} out of A's memory (CUDA IPC) and continues as A does`,
      passed: same && worst <= cudaLogitTolerance && controlErr > cudaLogitTolerance,
      detail: `tokens ${same ? 'equal' : `differ: A ${a.tokens} B ${fromB.tokens}`}; worst logits relError B vs A ${worst.toExponential(2)}; control without the pull ${controlErr.toExponential(2)} (must exceed ${cudaLogitTolerance})`,
    };
  } finally {
    b.close();
    child.stdin.end();
    const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000).unref())]);
    if (code === 'timeout') child.kill('SIGKILL');
  }
}

export function kvPeerChecks(): Promise<GpuCheck[]> {
  return perTransferModel(peerCheck);
}
