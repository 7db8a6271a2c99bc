/**
 * Whether a serving rank reuses KV by prompt prefix: the rank config's
 * --[no-]enable-prefix-caching against what the model allows. A model with linear-attention
 * (gdn) layers keeps a recurrent state per sequence that KV blocks do not hold, so a cached
 * prefix could not be resumed there: caching is off by default and the flag is an error.
 */
import { STATE_SLOTS_NO_PREFIX_REUSE, type EngineModelInfo } from '../serving/engineLike.js';

/**
 * Prefix caching of a rank: the config's --[no-]enable-prefix-caching, or when unset (null)
 * on, except for a model with recurrent-state slots (linear-attention layers, info.numStateSlots
 * > 0): off, with a note saying why (the role logs it). Throws when the flag asks for it on such a model.
 */
export function prefixCachingOf(enable: boolean | null, info: Pick<EngineModelInfo, 'numStateSlots'>): { enabled: boolean; note: string | null } {
  if ((info.numStateSlots ?? 0) === 0) return { enabled: enable ?? true, note: null };
  if (enable === true) {
    throw new Error(`--enable-prefix-caching cannot be used with this model: ${STATE_SLOTS_NO_PREFIX_REUSE}, so a cached prefix cannot be resumed; leave the flag out (prefix caching is then off for this model)`);
  }
  return { enabled: false, note: enable === null ? `prefix caching off: ${STATE_SLOTS_NO_PREFIX_REUSE}` : null };
}
