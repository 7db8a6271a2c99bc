/** The errors a decode rank sees from `KvTransferClient`. */

/**
 * The connection to the prefill rank closed or broke while a job was in flight (or could not
 * be made again). `nothingReceived` is true when none of the job's KV or state had been handed
 * to `onBlocks`/`onState`: the caller may then rerun it elsewhere with a clean slate.
 */
export class PrefillRankLostError extends Error {
  override readonly name = 'PrefillRankLostError';

  constructor(
    message: string,
    readonly nothingReceived: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The prefill rank ran the job and it failed there; `message` is the rank's. */
export class PrefillFailedError extends Error {
  override readonly name = 'PrefillFailedError';

  constructor(
    readonly jobId: string,
    readonly rankMessage: string,
  ) {
    super(`prefill ${jobId} failed on the prefill rank: ${rankMessage}`);
  }
}

/** The prefill rank refused the connection (protocol version or launch id mismatch). */
export class PrefillRankRefusedError extends Error {
  override readonly name = 'PrefillRankRefusedError';

  constructor(
    readonly endpoint: string,
    readonly reason: string,
  ) {
    super(`prefill rank at ${endpoint} refused the connection: ${reason}`);
  }
}

/** The prefill rank broke the protocol for one job (a chunk of the wrong size, a block twice, a missing block). */
export class KvTransferProtocolError extends Error {
  override readonly name = 'KvTransferProtocolError';
}

/** The rejection of an aborted job: the signal's reason when it is an Error, else an AbortError. */
export function abortErrorOf(signal: AbortSignal, what: string): Error {
  if (signal.reason instanceof Error) return signal.reason;
  return new DOMException(`${what} aborted`, 'AbortError');
}
