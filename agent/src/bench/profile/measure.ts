/**
 * The three curves of a cost profile, measured on role engines of the real addon:
 * - attention half: an attention engine with its FFN half on a local ffn engine
 *   (attachFfn): step time minus the attached FFN's device time (the ffn engine's
 *   ffnComputeMs: the attached executor waits for both engines' queued work around it, so on
 *   CUDA it is the FFN's device time, not its launches);
 * - FFN half: on the CPU, ffnForward of every layer on an ffn engine, per token count; on
 *   CUDA, the attached FFN's device time in decode steps of that many sequences
 *   (measureFfnAttached: ffnForward from JS would add a host round trip per layer);
 * - connector: the same decode step over a real 1A1F link (FfnServer + AttentionLink over
 *   loopback TCP) minus the same step with the FFN attached locally, per layer.
 */
import { AttentionLink, FfnServer, type Engine } from '@afd/native';
import { resolveRankConfig, type AfdConnector, type AttentionPoint, type FfnPoint, type LinkPoint, type StepResult } from '@afd/shared';
import { decodeSteps, loadRoleEngine, median, prefill, type RigOptions } from './rig.js';

export interface Reps {
  warmup: number;
  steps: number;
}

/** Attention-half ms per decode step for each (batch, context). */
export async function measureAttention(o: RigOptions, batches: number[], contexts: number[], reps: Reps): Promise<AttentionPoint[]> {
  const attn = await loadRoleEngine(o, 'attention');
  const ffn = await loadRoleEngine(o, 'ffn');
  try {
    attn.attachFfn(ffn);
    const out: AttentionPoint[] = [];
    for (const context of contexts) {
      const p = await prefill(attn, o, Math.max(...batches), context);
      for (const batch of batches) {
        const ms: number[] = [];
        await decodeSteps(attn, p, batch, reps, ffnTimed(ffn, (r, ffnMs) => ms.push(Math.max(0, r.stepTimeMs - ffnMs))));
        out.push({ batch, context, ms: median(ms) });
      }
    }
    return out;
  } finally {
    attn.close();
    ffn.close();
  }
}

/** A decodeSteps sampler that also passes the attached ffn engine's compute ms of that step. */
function ffnTimed(ffn: Engine, sample: (r: StepResult, ffnMs: number) => void): (r: StepResult) => void {
  let before = ffn.stats().ffnComputeMs;
  return (r) => {
    const now = ffn.stats().ffnComputeMs;
    sample(r, now - before);
    before = now;
  };
}

/**
 * FFN-half ms per decode step for each token count, on the device: decode steps of that many
 * sequences (context `context`) with the FFN attached, its compute time per step (CUDA).
 */
export async function measureFfnAttached(o: RigOptions, tokenCounts: number[], context: number, reps: Reps): Promise<FfnPoint[]> {
  const attn = await loadRoleEngine(o, 'attention');
  const ffn = await loadRoleEngine(o, 'ffn');
  try {
    attn.attachFfn(ffn);
    const p = await prefill(attn, o, Math.max(...tokenCounts), context);
    const out: FfnPoint[] = [];
    for (const tokens of tokenCounts) {
      const ms: number[] = [];
      await decodeSteps(attn, p, tokens, reps, ffnTimed(ffn, (_r, ffnMs) => ms.push(ffnMs)));
      out.push({ tokens, ms: median(ms) });
    }
    return out;
  } finally {
    attn.close();
    ffn.close();
  }
}

/** FFN-half ms per decode step (every layer) for each token count. */
export async function measureFfn(o: RigOptions, tokenCounts: number[], reps: Reps): Promise<FfnPoint[]> {
  const ffn = await loadRoleEngine(o, 'ffn');
  try {
    const { numLayers, hiddenSize } = ffn.info;
    const out: FfnPoint[] = [];
    for (const tokens of tokenCounts) {
      const hidden = Float32Array.from({ length: tokens * hiddenSize }, (_, i) => Math.sin(i * 0.37) * 0.5);
      const ms: number[] = [];
      for (let i = 0; i < reps.warmup + reps.steps; i++) {
        const t = performance.now();
        for (let layer = 0; layer < numLayers; layer++) await ffn.ffnForward(layer, hidden, tokens);
        if (i >= reps.warmup) ms.push(performance.now() - t);
      }
      out.push({ tokens, ms: median(ms) });
    }
    return out;
  } finally {
    ffn.close();
  }
}

/** An attention engine linked to an FFN server of this process over `connector` (1A1F). */
async function linkedPair(o: RigOptions, connector: AfdConnector): Promise<{ attn: Engine; close: () => Promise<void> }> {
  const attn = await loadRoleEngine(o, 'attention');
  let ffn: Engine | null = null;
  let server: FfnServer | null = null;
  let link: AttentionLink | null = null;
  try {
    ffn = await loadRoleEngine(o, 'ffn');
    const config = (role: 'attention' | 'ffn', port: number) => resolveRankConfig({ afd: { role, topology: '1A1F', rank: 0, port, connector, rendezvousTimeoutMs: 20_000 } });
    server = new FfnServer(ffn, config('ffn', 0));
    link = new AttentionLink(attn, config('attention', server.listenPort()));
    await Promise.all([server.start(), link.connect()]);
  } catch (e) {
    await link?.close({ shutdown: false });
    await server?.stop();
    attn.close();
    ffn?.close();
    throw e;
  }
  const [l, srv, f] = [link, server, ffn];
  return {
    attn,
    close: async () => {
      await l.close({ shutdown: true });
      await srv.wait();
      attn.close();
      f.close();
    },
  };
}

/**
 * Connector ms per layer round trip against the bytes sent each way (batch x hidden x
 * wireBytes): (linked step - attached step) / layers, steps interleaved so drift cancels.
 */
export async function measureConnector(o: RigOptions, connector: AfdConnector, batches: number[], context: number, wireBytes: number, reps: Reps): Promise<LinkPoint[]> {
  const engines: Engine[] = [];
  let linked: Awaited<ReturnType<typeof linkedPair>> | null = null;
  try {
    const local = await loadRoleEngine(o, 'attention');
    engines.push(local);
    engines.push(await loadRoleEngine(o, 'ffn'));
    local.attachFfn(engines[1]!);
    linked = await linkedPair(o, connector);
    const { numLayers, hiddenSize } = local.info;
    const maxBatch = Math.max(...batches);
    const pl = await prefill(local, o, maxBatch, context);
    const pr = await prefill(linked.attn, o, maxBatch, context);
    const out: LinkPoint[] = [];
    for (const batch of batches) {
      const a: number[] = [];
      const b: number[] = [];
      // A difference of two noisy medians: twice the rounds of the other curves.
      for (let round = 0; round < 2 * reps.steps; round++) {
        await decodeSteps(local, pl, batch, { warmup: round === 0 ? reps.warmup : 0, steps: 1 }, (_, wall) => a.push(wall));
        await decodeSteps(linked.attn, pr, batch, { warmup: round === 0 ? reps.warmup : 0, steps: 1 }, (_, wall) => b.push(wall));
      }
      out.push({ bytes: batch * hiddenSize * wireBytes, ms: Math.max(0, (median(b) - median(a)) / numLayers) });
    }
    return out;
  } finally {
    await linked?.close();
    for (const e of engines) e.close();
  }
}
