/**
 * FakeEngine's KV export / import (EngineLike.kvTransfer): each KV slot travels as 20 bytes
 * (its writer's seed f64, position i32, token i32, history u32), a state slot as 16 (seed,
 * token count, history); an imported state slot matches any seed (NaN), as the real
 * engine's state does not depend on which sequence computed it. Its peer memory (one host):
 * fakeKvPeer.ts.
 */
import type { EngineModelInfo, KvTransferEngine } from '../engineLike.js';
import { fakeKvPeer } from './fakeKvPeer.js';

/** The fake engine's per-slot KV content (FakeEngine's arrays, shared, not copied). */
export interface FakeKvSlots {
  seed: Float64Array;
  pos: Int32Array;
  token: Int32Array;
  history: Uint32Array;
}

/** The fake engine's recurrent-state table (shared). */
export type FakeStateTable = Map<number, { seed: number; numTokens: number; history: number }>;

export function fakeKvTransfer(info: EngineModelInfo, slots: FakeKvSlots, states: FakeStateTable): KvTransferEngine {
  const bs = info.kvBlockSize;
  const numBlocks = info.numKvBlocks;
  const checkIds = (ids: Int32Array): void => {
    for (const b of ids) if (b < 0 || b >= numBlocks) throw new Error(`kv transfer: block ${b} is outside [0, ${numBlocks})`);
  };
  return {
    kvLayout: { dtype: 'f32', blockSize: bs, numKvLayers: 1, tensorsPerLayer: 1, rowBytes: 20, stateBytes: (info.numStateSlots ?? 0) > 0 ? 16 : 0 },
    exportKvBlocks: async (ids) => {
      checkIds(ids);
      const out = new DataView(new ArrayBuffer(ids.length * bs * 20));
      ids.forEach((b, k) => {
        for (let o = 0; o < bs; o++) {
          const s = b * bs + o;
          const at = (k * bs + o) * 20;
          out.setFloat64(at, slots.seed[s]!, true);
          out.setInt32(at + 8, slots.pos[s]!, true);
          out.setInt32(at + 12, slots.token[s]!, true);
          out.setUint32(at + 16, slots.history[s]!, true);
        }
      });
      return new Uint8Array(out.buffer);
    },
    importKvBlocks: async (ids, data) => {
      checkIds(ids);
      if (data.byteLength !== ids.length * bs * 20) throw new Error(`kv transfer: ${ids.length} blocks need ${ids.length * bs * 20} bytes, got ${data.byteLength}`);
      const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
      ids.forEach((b, k) => {
        for (let o = 0; o < bs; o++) {
          const s = b * bs + o;
          const at = (k * bs + o) * 20;
          slots.seed[s] = v.getFloat64(at, true);
          slots.pos[s] = v.getInt32(at + 8, true);
          slots.token[s] = v.getInt32(at + 12, true);
          slots.history[s] = v.getUint32(at + 16, true);
        }
      });
    },
    exportStateSlot: async (slot) => {
      const st = states.get(slot);
      if (!st) throw new Error(`kv transfer: state slot ${slot} holds no state`);
      const v = new DataView(new ArrayBuffer(16));
      v.setFloat64(0, st.seed, true);
      v.setInt32(8, st.numTokens, true);
      v.setUint32(12, st.history, true);
      return new Uint8Array(v.buffer);
    },
    importStateSlot: async (slot, data) => {
      if (data.byteLength !== 16) throw new Error(`kv transfer: a state slot is 16 bytes, got ${data.byteLength}`);
      const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
      states.set(slot, { seed: NaN, numTokens: v.getInt32(8, true), history: v.getUint32(12, true) });
    },
    peer: fakeKvPeer(info, slots, states),
  };
}
