/**
 * The FFN role's native server: loads only the FFN half, binds its rendezvous port, and
 * runs the daemon loop on a native thread until an attention rank sends the shutdown flag
 * or the process is told to stop.
 */
import { Engine, FfnServer } from '@afd/native';
import { assertEngineBuilds, roleLoadSpec } from '@afd/native/checkpoint';
import { formatExpertRange } from '@afd/shared';
import type { FfnServerOpener } from './ffnServer.js';
import { applyNcclEnv, checkTransportsFit, resolveBackend } from './nativeEngine.js';
import { checkRankFitsHost } from './rankMemory.js';

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export const nativeFfnServerOpener: FfnServerOpener = async ({ modelDir, config, onProgress, onPeerState }) => {
  const { afd, model } = config;
  applyNcclEnv(afd);
  const backend = await resolveBackend(config.device.backend);
  checkTransportsFit(config, backend);
  onProgress('loading', 0, 0, `reading ${modelDir}`);
  // Expert parallelism: this rank maps (or generates) only its routed experts (e -> floor(e * y / E)).
  const numFfn = afd.topology.ffn.ranks;
  const expertParallel = afd.enableExpertParallel && numFfn > 1 ? { rank: afd.rank, numRanks: numFfn } : undefined;
  const { spec, residentBytes } = await roleLoadSpec(modelDir, 'ffn', {
    computeGateOnAttention: afd.computeGateOnAttention,
    loadFormat: model.loadFormat,
    seed: model.seed,
    onNote: (m) => onProgress('loading', 0, 0, m),
    ...(expertParallel ? { expertParallel } : {}),
  });
  assertEngineBuilds(spec.config); // a family the engine cannot build yet says so, not that it does not fit
  checkRankFitsHost({ config, role: 'ffn', backend, weightsBytes: residentBytes }); // before the engine allocates
  const E = spec.config.numExperts;
  const held = spec.expertRange
    ? `${formatExpertRange(spec.expertRange)} of ${E} per MoE layer (expert parallel over ${numFfn} FFN ranks)`
    : E > 0
      ? `all ${E} experts`
      : 'dense';
  const verb = model.loadFormat === 'dummy' ? `generating ${spec.tensors.length} dummy FFN tensors (seed ${model.seed})` : `mapping ${spec.tensors.length} FFN tensors`;
  onProgress('loading', 0, residentBytes, `${verb} on ${backend}: ${held}, ${mib(residentBytes)}`);
  const native = await Engine.load(spec, { backend, threads: config.device.threads, deviceIndex: config.device.index });
  const info = native.info;
  onProgress('loading', residentBytes, residentBytes);
  let server: FfnServer;
  try {
    server = new FfnServer(native, config);
  } catch (err) {
    native.close();
    throw err;
  }
  const st0 = server.state();
  onProgress('rendezvous', 0, st0.blockSize, `listening on ${st0.listenAddress} for attention ranks ${st0.firstAttentionRank}..${st0.firstAttentionRank + st0.blockSize - 1}`);
  let joined = 0;
  let started = false; // after the first rendezvous, a re-rendezvous is a peer problem, not a startup phase
  const poll = setInterval(() => {
    const st = server.state();
    if (!started && st.state === 'rendezvous' && st.peersJoined !== joined) {
      joined = st.peersJoined;
      onProgress('rendezvous', st.peersJoined, st.blockSize);
    }
    if (st.state === 'failed') onPeerState(`FFN loop failed: ${st.lastError}`);
    else if (st.state === 'rendezvous' && st.peerLosses > 0) {
      // With expert parallelism a gathered block still waits for the other FFN ranks of the group.
      const waiting =
        expertParallel && st.peersJoined === st.blockSize
          ? `waiting for the other FFN ranks of the expert-parallel group (0..${numFfn - 1}) to rejoin`
          : `waiting for attention ranks ${st.firstAttentionRank}..${st.firstAttentionRank + st.blockSize - 1} to rejoin (${st.peersJoined}/${st.blockSize})`;
      onPeerState(`lost a peer (${st.lastError}); ${waiting}`);
    }
    else onPeerState(null);
  }, 250);
  poll.unref();
  try {
    await server.start();
  } catch (err) {
    clearInterval(poll);
    await server.stop().catch(() => undefined);
    native.close();
    throw err;
  }
  started = true;
  onProgress('rendezvous', st0.blockSize, st0.blockSize);
  let closed = false;
  return {
    description: `${info.arch} ffn rank ${afd.rank} on ${info.backend} (${info.threads} threads): ${mib(info.residentWeightBytes)} weights (${held}), serving at ${st0.listenAddress}`,
    stats: () => ({ ...server.rankStats(afd.rank), dbo: afd.dbo.enabled }),
    // Only the shutdown flag (or our own close) is a clean end; anything else is a failure
    // the agent must see (an exit code 0 here once hid a failed rendezvous as a normal stop).
    done: server.wait().then((reason) => {
      if (closed || reason.startsWith('shutdown requested by')) return reason;
      const st = server.state();
      throw new Error(`FFN rank ${afd.rank} loop ended unexpectedly (${st.state}): ${st.lastError || reason}`);
    }),
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(poll);
      await server.stop().catch(() => undefined);
      native.close();
    },
  };
};
