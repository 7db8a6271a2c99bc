/**
 * The distinct tokens a sequence has seen (prompt and output) with their output counts, the
 * list its penalties read every step (PlanPenalties.seen). A Map for readers, that also keeps
 * the entries in two typed arrays in insertion order, so buildStepExtras copies a sequence's
 * list with two memcpys instead of iterating a Map (about 1,000 entries per sequence at
 * 1024-token prompts: iteration cost ~2 ms per step at 64 sequences).
 */
export class SeenTokens extends Map<number, number> {
  private idsBuf = new Int32Array(64);
  private countsBuf = new Int32Array(64);
  /** Slot of each id in the arrays. */
  private readonly slot = new Map<number, number>();

  override set(id: number, count: number): this {
    // Map's constructor calls set before the fields exist: SeenTokens starts empty, so none come.
    super.set(id, count);
    let i = this.slot.get(id);
    if (i === undefined) {
      i = this.slot.size;
      if (i === this.idsBuf.length) this.grow();
      this.slot.set(id, i);
      this.idsBuf[i] = id;
    }
    this.countsBuf[i] = count;
    return this;
  }

  override delete(_id: number): boolean {
    throw new Error('SeenTokens: entries are never removed (a sequence does not unsee a token)');
  }

  override clear(): void {
    throw new Error('SeenTokens: entries are never removed (a sequence does not unsee a token)');
  }

  /** Ids in insertion order (a view; valid until the next new id). */
  ids(): Int32Array {
    return this.idsBuf.subarray(0, this.slot.size);
  }

  /** Output counts, aligned with ids() (a view). */
  counts(): Int32Array {
    return this.countsBuf.subarray(0, this.slot.size);
  }

  private grow(): void {
    const ids = new Int32Array(this.idsBuf.length * 2);
    const counts = new Int32Array(this.countsBuf.length * 2);
    ids.set(this.idsBuf);
    counts.set(this.countsBuf);
    this.idsBuf = ids;
    this.countsBuf = counts;
  }
}
