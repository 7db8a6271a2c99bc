/**
 * A profile's MPS SM-share slowdowns (CostProfile.smShares) from profiles of the same model
 * measured under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: per role and share, the median over the
 * grid points both profiles have of (time at the share) / (time at the whole GPU), at least
 * 1. One number per role and share, as the planner's shared-device model reads it (costs.ts
 * interpolates between shares); the spread over the grid is lost (at a 40% share an H100's
 * attention half ranged 1.24-1.74x over batch and context).
 */
import type { CostProfile, SmSharePoint } from './profile.js';

export interface ShareProfile {
  /** Fraction of the SMs, (0, 1]. */
  share: number;
  profile: CostProfile;
}

const median = (v: number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** The slowdowns of `measured` against `full`; throws naming a profile of another model or backend, or one with no common point. */
export function smSharesOf(full: CostProfile, measured: readonly ShareProfile[]): SmSharePoint[] {
  const out: SmSharePoint[] = [];
  for (const { share, profile } of measured) {
    if (!(share > 0 && share <= 1)) throw new Error(`smShares: share ${share} is outside (0, 1]`);
    if (profile.model.name !== full.model.name || profile.backend !== full.backend) {
      throw new Error(`smShares: the ${share} profile is of ${profile.model.name} on ${profile.backend}, the full one of ${full.model.name} on ${full.backend}`);
    }
    const attention = new Map(full.attention.map((p) => [`${p.batch}x${p.context}`, p.ms]));
    const ffn = new Map(full.ffn.map((p) => [p.tokens, p.ms]));
    const ratios = {
      attention: profile.attention.flatMap((p) => (attention.get(`${p.batch}x${p.context}`) ?? 0) > 0 ? [p.ms / attention.get(`${p.batch}x${p.context}`)!] : []),
      ffn: profile.ffn.flatMap((p) => (ffn.get(p.tokens) ?? 0) > 0 ? [p.ms / ffn.get(p.tokens)!] : []),
    };
    for (const role of ['attention', 'ffn'] as const) {
      if (ratios[role].length === 0) throw new Error(`smShares: the ${share} profile has no ${role} point the full profile has`);
      out.push({ role, share, slowdown: Math.max(1, median(ratios[role])) });
    }
  }
  return out;
}
