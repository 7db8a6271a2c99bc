/**
 * Checkpoint errors: every problem names the file, the tensor (when there is one), what is
 * wrong and what to do. Thrown as values of one class so callers can tell a bad checkpoint
 * from a bug.
 */
export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';
  /** The file the problem is in (config.json, a safetensors shard, the index). */
  readonly file: string;
  /** The tensor the problem is about, when there is one. */
  readonly tensor: string | undefined;

  constructor(file: string, problem: string, opts: { tensor?: string; fix?: string } = {}) {
    const where = opts.tensor ? `${file}: tensor ${opts.tensor}: ` : `${file}: `;
    super(`${where}${problem}${opts.fix ? ` (${opts.fix})` : ''}`);
    this.file = file;
    this.tensor = opts.tensor;
  }
}

/** Format a shape like [4, 72]. */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}
