/**
 * FakeEngine's peer memory (KvTransferEngine.peer), as the real engine's on one host: each
 * fake registers its KV slot arrays and state table under a generated handle (the
 * descriptor's `kv`), and a peer that opens the descriptor copies slot contents straight
 * from them, as a decode rank copies from the prefill rank's mapped cache. Kind cpu, host
 * os.hostname(). A pulled state slot matches any seed (NaN), as an imported one does.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { EngineModelInfo, KvPeerDescriptor, KvPeerEngine, KvPeerLink } from '../engineLike.js';
import type { FakeKvSlots, FakeStateTable } from './fakeKvTransfer.js';

interface Shared {
  info: EngineModelInfo;
  slots: FakeKvSlots;
  states: FakeStateTable;
}

/** Every fake engine's shareable memory in this process, by handle. */
const registry = new Map<string, Shared>();

export function fakeKvPeer(info: EngineModelInfo, slots: FakeKvSlots, states: FakeStateTable): KvPeerEngine {
  const handle = Buffer.from(randomUUID()).toString('base64');
  registry.set(handle, { info, slots, states });
  const numStateSlots = info.numStateSlots ?? 0;
  const descriptor: KvPeerDescriptor = {
    kind: 'cpu',
    host: hostname(),
    kv: handle,
    kvBytes: info.numKvBlocks * info.kvBlockSize * 20,
    ...(numStateSlots > 0 ? { state: handle } : {}),
    stateBytes: numStateSlots > 0 ? 16 : 0,
    numKvBlocks: info.numKvBlocks,
    numStateSlots,
  };
  return {
    kind: 'cpu',
    host: hostname(),
    descriptor,
    fence: async () => undefined,
    open: async (d) => {
      if (d.kind !== 'cpu') throw new Error(`a fake engine maps cpu memory, not ${d.kind}`);
      if (d.host !== hostname()) throw new Error(`the memory is on ${d.host}, not this host (${hostname()})`);
      const src = registry.get(d.kv);
      if (!src) throw new Error(`no fake engine shares the handle ${d.kv}`);
      return link(src, { info, slots, states });
    },
  };
}

function link(src: Shared, dst: Shared): KvPeerLink {
  const bs = dst.info.kvBlockSize;
  if (src.info.kvBlockSize !== bs) throw new Error(`block sizes differ: ${src.info.kvBlockSize} there, ${bs} here`);
  const check = (ids: Int32Array, info: EngineModelInfo, side: string): void => {
    for (const b of ids) if (b < 0 || b >= info.numKvBlocks) throw new Error(`peer copy: ${side} block ${b} is outside [0, ${info.numKvBlocks})`);
  };
  let closed = false;
  return {
    pullKvBlocks: async (srcIds, dstIds) => {
      if (closed) throw new Error('peer copy: the link is closed');
      if (srcIds.length !== dstIds.length) throw new Error(`peer copy: ${srcIds.length} source blocks for ${dstIds.length} destination blocks`);
      check(srcIds, src.info, 'source');
      check(dstIds, dst.info, 'destination');
      srcIds.forEach((sb, k) => {
        const from = sb * bs;
        const to = dstIds[k]! * bs;
        dst.slots.seed.set(src.slots.seed.subarray(from, from + bs), to);
        dst.slots.pos.set(src.slots.pos.subarray(from, from + bs), to);
        dst.slots.token.set(src.slots.token.subarray(from, from + bs), to);
        dst.slots.history.set(src.slots.history.subarray(from, from + bs), to);
      });
    },
    pullStateSlot: async (srcSlot, dstSlot) => {
      if (closed) throw new Error('peer copy: the link is closed');
      const st = src.states.get(srcSlot);
      if (!st) throw new Error(`peer copy: state slot ${srcSlot} holds no state`);
      dst.states.set(dstSlot, { seed: NaN, numTokens: st.numTokens, history: st.history });
    },
    close: () => {
      closed = true;
    },
  };
}
