/**
 * The n samples of one request: n sequences with one prompt and their own seeds. The
 * prompt's full blocks are computed once and shared (BlockManager reference counts):
 *
 *   - a member admitted while another running member's KV already holds the shared prefix
 *     takes over those blocks and computes only the prompt's tail, in a block of its own
 *     (the partial last block is recomputed per member instead of copied: the
 *     copy-on-write at the first block where the members differ);
 *   - a member admitted while another one is still prefilling the prefix waits for it;
 *   - a member admitted when no member holds or computes the prefix prefills the whole
 *     prompt itself (first admission, a preempted or finished leader), and the others
 *     then wait for it.
 *
 * So preemption and aborts need no special case: whoever holds the prefix when a member is
 * admitted is its donor. A member that finishes while a sibling still waits to share
 * (max_tokens 1, a stop at the first token) leaves the prefix to the group until the next
 * schedule (`holdId`), so the siblings still share it. Pure data, no tensors.
 */
import type { Sequence } from './Sequence.js';

/** How a member with nothing in the KV cache starts. */
export type Admission =
  /** Share the first `numSharedTokens / kvBlockSize` blocks of `donorId` (a member, or the group's hold) and compute from there. */
  | { kind: 'share'; donorId: string; numSharedTokens: number }
  /** Another member is prefilling the shared prefix: wait for it (not scheduled this step). */
  | { kind: 'wait' }
  /** Compute the whole prompt. */
  | { kind: 'prefill' };

export class PromptGroup {
  /**
   * Prompt tokens the members share: the full blocks before the prompt's last token (each
   * member computes at least that one itself, to sample its first token). 0 = no sharing.
   */
  readonly numSharedTokens: number;
  /** The BlockManager owner of the shared prefix while no running member holds it (see holdFrom). */
  readonly holdId: string;
  /** True while `holdId` owns the shared prefix. */
  held = false;

  constructor(
    /** The samples, oldest (the first leader) first. */
    readonly members: readonly Sequence[],
    kvBlockSize: number,
  ) {
    const first = members[0];
    if (!first) throw new Error('PromptGroup: a group needs at least one sequence');
    const prompt = first.promptIds;
    const other = members.find((s) => s.promptIds !== prompt && (s.promptIds.length !== prompt.length || s.promptIds.some((t, i) => t !== prompt[i])));
    if (other) throw new Error(`PromptGroup: ${other.id} has another prompt than ${first.id}; the samples of a group share one prompt`);
    this.numSharedTokens = Math.floor((prompt.length - 1) / kvBlockSize) * kvBlockSize;
    this.holdId = `${first.id}/shared-prompt`;
  }

  /** A running member whose KV holds the shared prefix. */
  private holder(except: Sequence): Sequence | undefined {
    return this.members.find((m) => m !== except && m.status === 'running' && m.numComputedTokens >= this.numSharedTokens);
  }

  /**
   * True when `leaving`, a member about to free its blocks, is the last to hold the shared
   * prefix while a sibling still waits to share it: the group should keep it (`holdId`).
   */
  shouldHoldFrom(leaving: Sequence): boolean {
    const s = this.numSharedTokens;
    if (s === 0 || this.held || leaving.numComputedTokens < s || this.holder(leaving)) return false;
    return this.members.some((m) => m.status === 'waiting');
  }

  /** How `seq`, a member waiting with nothing in the KV cache, starts now. */
  admission(seq: Sequence): Admission {
    const s = this.numSharedTokens;
    if (s === 0) return { kind: 'prefill' };
    const donorId = this.holder(seq)?.id ?? (this.held ? this.holdId : undefined);
    if (donorId !== undefined) return { kind: 'share', donorId, numSharedTokens: s };
    return this.members.some((m) => m !== seq && m.status === 'running') ? { kind: 'wait' } : { kind: 'prefill' };
  }
}
