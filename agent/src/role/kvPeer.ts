/**
 * The native engine's peer memory as the serving layer's KvPeerEngine (prefill/decode
 * disaggregation on one host): an engine loaded with kvShareable keeps its KV cache (and
 * recurrent state) in memory another process can map: CUDA IPC on a GPU, a shared mmap'd file
 * under kvShareDir on the CPU. The prefill rank hands out its descriptor (handles as base64 on
 * the wire); the decode rank opens it and copies blocks from it into its own cache.
 */
import { hostname } from 'node:os';
import type { Engine, EngineLoadOptions, KvShareDescriptor } from '@afd/native';
import type { KvPeerDescriptor, KvPeerEngine, KvPeerLink } from '../serving/engineLike.js';

/** The engine's peer-memory methods (native/src/engine.ts). */
export type NativePeerApi = Pick<Engine, 'kvShareDescriptor' | 'kvFence' | 'openKvPeer' | 'pullKvBlocks' | 'pullStateSlot' | 'closeKvPeer'> & {
  readonly info: { backend: string };
};

/** Load options of an engine whose KV peers on this host may map. */
export type KvShareOptions = Pick<EngineLoadOptions, 'kvShareable' | 'kvShareDir'>;

/** The engine's peer memory as the serving layer sees it; `host` names this machine. */
export function kvPeerOf(api: NativePeerApi, host: string = hostname()): KvPeerEngine {
  const kind = api.info.backend === 'cuda' ? 'cuda' : 'cpu';
  let descriptor: KvPeerDescriptor | null | undefined;
  return {
    kind,
    host,
    get descriptor(): KvPeerDescriptor | null {
      if (descriptor === undefined) {
        const d = api.kvShareDescriptor();
        descriptor = d && toWire(d, host);
      }
      return descriptor;
    },
    fence: () => api.kvFence(),
    open: async (d) => {
      if (d.host !== host) throw new Error(`the prefill rank's memory is on ${d.host}, not this host (${host})`);
      if (d.kind !== kind) throw new Error(`the prefill rank's KV is in ${d.kind} memory, this engine's in ${kind}`);
      const id = await api.openKvPeer(fromWire(d));
      return linkOf(api, id);
    },
  };
}

function linkOf(api: NativePeerApi, id: number): KvPeerLink {
  let closed = false;
  return {
    pullKvBlocks: (src, dst) => api.pullKvBlocks(id, src, dst),
    pullStateSlot: (src, dst) => api.pullStateSlot(id, src, dst),
    close: () => {
      if (closed) return;
      closed = true;
      api.closeKvPeer(id);
    },
  };
}

function toWire(d: KvShareDescriptor, host: string): KvPeerDescriptor {
  const b64 = (u: Uint8Array): string => Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('base64');
  return { kind: d.kind, host, kv: b64(d.kv), kvBytes: d.kvBytes, ...(d.state ? { state: b64(d.state) } : {}), stateBytes: d.stateBytes, numKvBlocks: d.numKvBlocks, numStateSlots: d.numStateSlots };
}

function fromWire(d: KvPeerDescriptor): KvShareDescriptor {
  const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'));
  return { kind: d.kind, kv: bytes(d.kv), kvBytes: d.kvBytes, state: d.state !== undefined ? bytes(d.state) : null, stateBytes: d.stateBytes, numKvBlocks: d.numKvBlocks, numStateSlots: d.numStateSlots };
}
