/**
 * Ranks sharing one device, for the step simulator (which otherwise gives every rank its own):
 *
 * - cpu:C — the engine threads of the topology (one per rank) run on C cores. A compute
 *   event is slowed by max(1, busy / C), busy being the time-averaged count of compute
 *   events running during it (threads waiting on a link are taken as blocked, not
 *   spinning). The schedule and the slowdowns depend on each other, so the simulator
 *   iterates: schedule, measure overlap, rescale, until the slowdowns settle (damped by
 *   half each round).
 * - mps:attention=a,ffn=f — attention and FFN ranks share GPUs under MPS, each role with
 *   its share of the SMs. A role's time at share s is the profile's measured slowdown when
 *   it has one, else t_full / s^alpha: alpha 1 is a compute-bound kernel (half the SMs,
 *   twice the time), alpha 0 a purely memory-bound one; the default 1 is the pessimistic
 *   end, since decode kernels are partly memory-bound.
 */
import type { LayerCosts } from './costs.js';

export type SharedDevice = { kind: 'cpu'; cores: number } | { kind: 'mps'; attentionShare: number; ffnShare: number; alpha: number };

/** A compute event as scheduled: its interval and how many identical copies run with it (identical blocks). */
export interface ComputeInterval {
  start: number;
  end: number;
  copies: number;
}

/** Parses `cpu:2` or `mps:attention=40,ffn=60[,alpha=0.8]` (shares in percent of the SMs). */
export function parseSharedDevice(spec: string): SharedDevice {
  const [kind, rest = ''] = spec.split(':', 2) as [string, string?];
  if (kind === 'cpu') {
    const cores = Number(rest);
    if (!Number.isFinite(cores) || cores <= 0) throw new Error(`--shared-device cpu:<cores> needs a positive number of cores, got "${spec}"`);
    return { kind: 'cpu', cores };
  }
  if (kind === 'mps') {
    const kv = new Map(rest.split(',').map((p) => p.split('=', 2) as [string, string]));
    const pct = (k: string): number => {
      const v = Number(kv.get(k));
      if (!(v > 0 && v <= 100)) throw new Error(`--shared-device mps: ${k}=<percent of the SMs, 1-100> is required, got "${spec}"`);
      return v / 100;
    };
    const alpha = kv.has('alpha') ? Number(kv.get('alpha')) : 1;
    if (!(alpha >= 0 && alpha <= 1)) throw new Error(`--shared-device mps: alpha must be within 0..1, got "${kv.get('alpha')}"`);
    return { kind: 'mps', attentionShare: pct('attention'), ffnShare: pct('ffn'), alpha };
  }
  throw new Error(`--shared-device takes cpu:<cores> or mps:attention=<pct>,ffn=<pct>[,alpha=<0..1>], got "${spec}"`);
}

/** A role's slowdown at its MPS share: the profile's measured points, else 1 / share^alpha. */
export function mpsSlowdown(costs: LayerCosts, d: Extract<SharedDevice, { kind: 'mps' }>, role: 'attention' | 'ffn'): number {
  const share = role === 'attention' ? d.attentionShare : d.ffnShare;
  return costs.smSlowdown?.(role, share) ?? 1 / share ** d.alpha;
}

/** Whether the MPS slowdowns come from the profile (else the alpha law). */
export const mpsMeasured = (costs: LayerCosts, d: Extract<SharedDevice, { kind: 'mps' }>): boolean =>
  costs.smSlowdown?.('attention', d.attentionShare) !== undefined && costs.smSlowdown?.('ffn', d.ffnShare) !== undefined;

/**
 * Each interval's slowdown on `cores`: max(1, mean busy count over it / cores), the busy
 * count summing every interval's copies (itself included). O(n log n): a sweep of the
 * interval ends into a step function of the busy count and its running integral.
 */
export function cpuSlowdowns(intervals: readonly ComputeInterval[], cores: number): number[] {
  const edges = intervals.flatMap((iv) => [{ t: iv.start, d: iv.copies }, { t: iv.end, d: -iv.copies }]).sort((a, b) => a.t - b.t);
  const times: number[] = [];
  const integral: number[] = []; // integral of the busy count from the first edge to times[i]
  let busy = 0;
  let area = 0;
  let last = edges[0]?.t ?? 0;
  for (const e of edges) {
    area += busy * (e.t - last);
    last = e.t;
    busy += e.d;
    if (times.length && times[times.length - 1] === e.t) integral[integral.length - 1] = area;
    else {
      times.push(e.t);
      integral.push(area);
    }
  }
  const at = (t: number): number => {
    let lo = 0;
    let hi = times.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (times[mid]! <= t) lo = mid;
      else hi = mid - 1;
    }
    return integral[lo]!;
  };
  return intervals.map((iv) => (iv.end > iv.start ? Math.max(1, (at(iv.end) - at(iv.start)) / (iv.end - iv.start) / cores) : 1));
}
