/** The native engine's peer memory as a KvPeerEngine (base64 handles, host and kind checks), and which ranks load their KV shareable. */
import type { Engine } from '@afd/native';
import { describe, expect, it } from 'vitest';
import { engineOptionsOf, kvShareOptionsOf, kvTransferOf } from './nativeEngine.js';
import type { KvShareDescriptor } from '@afd/native';
import { kvPeerOf, type NativePeerApi } from './kvPeer.js';
import { resolveRoleConfig } from './roleConfig.js';

function fakeNative(descriptor: KvShareDescriptor | null): NativePeerApi & { calls: unknown[][] } {
  const calls: unknown[][] = [];
  return {
    calls,
    info: { backend: 'cuda' },
    kvShareDescriptor: () => descriptor,
    kvFence: async () => void calls.push(['fence']),
    openKvPeer: async (d) => (calls.push(['open', d]), 3),
    pullKvBlocks: async (peer, src, dst) => void calls.push(['pull', peer, [...src], [...dst]]),
    pullStateSlot: async (peer, src, dst) => void calls.push(['state', peer, src, dst]),
    closeKvPeer: (peer) => void calls.push(['close', peer]),
  };
}

const shared: KvShareDescriptor = { kind: 'cuda', kv: Uint8Array.from([1, 2, 3, 250]), kvBytes: 1 << 30, state: null, stateBytes: 0, numKvBlocks: 4096, numStateSlots: 0 };

describe('kvPeerOf', () => {
  it('hands out the descriptor with base64 handles and the host; opens one the same way back, then pulls and closes by peer id', async () => {
    const native = fakeNative(shared);
    const peer = kvPeerOf(native, 'gpu-host-1');
    expect(peer).toMatchObject({ kind: 'cuda', host: 'gpu-host-1' });
    expect(peer.descriptor).toEqual({ kind: 'cuda', host: 'gpu-host-1', kv: 'AQID+g==', kvBytes: 1 << 30, stateBytes: 0, numKvBlocks: 4096, numStateSlots: 0 });
    await peer.fence();
    const link = await peer.open({ ...peer.descriptor!, state: 'BQY=' });
    expect(native.calls[1]).toEqual(['open', { ...shared, state: Uint8Array.from([5, 6]) }]);
    await link.pullKvBlocks(Int32Array.from([7, 8]), Int32Array.from([1, 2]));
    await link.pullStateSlot(4, 0);
    link.close();
    link.close();
    expect(native.calls.slice(2)).toEqual([['pull', 3, [7, 8], [1, 2]], ['state', 3, 4, 0], ['close', 3]]);
  });

  it('refuses memory on another host or of another kind, without asking the engine', async () => {
    const native = fakeNative(null);
    const peer = kvPeerOf(native, 'gpu-host-1');
    expect(peer.descriptor).toBeNull();
    const d = { kind: 'cuda' as const, host: 'gpu-host-2', kv: 'AA==', kvBytes: 1, stateBytes: 0, numKvBlocks: 1, numStateSlots: 0 };
    await expect(peer.open(d)).rejects.toThrow(/memory is on gpu-host-2, not this host \(gpu-host-1\)/);
    await expect(peer.open({ ...d, host: 'gpu-host-1', kind: 'cpu' })).rejects.toThrow(/in cpu memory, this engine's in cuda/);
    expect(native.calls).toEqual([]);
  });

  it('kvTransferOf gives every native engine its peer memory, of the backend\'s kind', () => {
    const info = { role: 'colocated', kvDtype: 'bf16', kvBlockSize: 16, kvNumLayers: 2, kvTensorsPerLayer: 2, kvRowBytes: 256, numStateSlots: 0, stateBytesPerSlot: 0, backend: 'cpu' };
    expect(kvTransferOf({ ...fakeNative(shared), info } as unknown as Engine).peer?.kind).toBe('cpu');
  });
});

describe('kvShareOptionsOf', () => {
  const env = { AFD_HOME: '/srv/afd' };
  it('loads the KV shareable on prefill ranks (the attention ranks map theirs), unless the transport is tcp', () => {
    const want = { kvShareable: true, kvShareDir: '/srv/afd/run/kv-share' };
    expect(kvShareOptionsOf(resolveRoleConfig('prefill', { topology: '1P1A1F' }), env)).toEqual(want);
    expect(engineOptionsOf(resolveRoleConfig('prefill', { topology: '2P1A1F', pdTransport: 'peer' }), 'cuda', env)).toMatchObject(want);
    expect(kvShareOptionsOf(resolveRoleConfig('prefill', { topology: '1P1A1F', pdTransport: 'tcp' }), env)).toEqual({});
    expect(kvShareOptionsOf(resolveRoleConfig('attention', { topology: '1P1A1F', pdTransport: 'peer' }), env)).toEqual({});
    expect(kvShareOptionsOf(resolveRoleConfig('attention', { topology: '1A1F' }), env)).toEqual({});
    expect(kvShareOptionsOf(resolveRoleConfig('colocated', {}), env)).toEqual({});
    expect(engineOptionsOf(resolveRoleConfig('colocated', {}), 'cpu', env)).not.toHaveProperty('kvShareable');
  });
});
