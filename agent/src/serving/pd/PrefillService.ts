/**
 * The engine boundary of a prefill rank: what `KvTransferServer` asks of the engine. The
 * engine side implements `PrefillService`; the server hands it a `PrefillSink` per job.
 */

/** One prefill a decode rank asked for. */
export interface PrefillJob {
  /**
   * Unique among the jobs in flight on one connection. Do not reuse the id of a job cancelled
   * on a connection on that connection: its last frames may still be on the way (the client refuses it).
   */
  id: string;
  /** The prompt's tokens: at least numBlocks * blockSize of them. */
  tokenIds: number[];
  /** Return the KV of the first numBlocks full blocks. */
  numBlocks: number;
  /** Prefix-cache domain (a tenant's salt), as the OpenAI `cache_salt`. */
  cacheSalt?: string;
  /**
   * Peer memory (agreed in the handshake): send block ids (sink.blockRefs / stateRef), not
   * bytes, and keep the blocks held until the result's release() is called.
   */
  peer?: boolean;
}

/**
 * Where a job's KV goes. Each promise resolves once the bytes are handed to the socket (after
 * backpressure): until then the sink owns `data`, and the caller must not reuse it. Calls of
 * one job may overlap; their chunks go out one after the other. After the job is cancelled
 * or its connection is gone, calls reject.
 */
export interface PrefillSink {
  /**
   * Blocks [blockOffset, blockOffset + numBlocks) in the engine's export format; `data` must be
   * exactly kvChunkBytes(layout, numBlocks) bytes, and every block of the job is sent once.
   */
  blocks(blockOffset: number, numBlocks: number, data: Uint8Array): Promise<void>;
  /** The sequence's recurrent state, exactly layout.stateBytes bytes; only when stateBytes > 0. */
  state(data: Uint8Array): Promise<void>;
  /** A peer job's blocks [blockOffset, blockOffset + blockIds.length): their ids in this engine's cache, at most maxRefBlocks. */
  blockRefs(blockOffset: number, blockIds: readonly number[]): Promise<void>;
  /** A peer job's recurrent state: its slot in this engine; only when stateBytes > 0. */
  stateRef(slot: number): Promise<void>;
}

/** What a prefill gives back: its times, and for a peer job the hold on its blocks. */
export interface PrefillResult {
  prefillMs: number;
  cachedTokens: number;
  /**
   * A peer job's blocks (and state slot) stay held for the decode rank to copy: the
   * connection calls this once it released them, cancelled, closed or timed out. Safe twice.
   */
  release?: () => void;
}

export interface PrefillService {
  /**
   * Prefills `job`, sends all its blocks (and the state) through `sink`, then resolves; throws
   * (any error, its message goes to the client) when it fails. `signal` aborts when the client
   * cancels or its connection closes: stop then, nothing more is sent. A peer job sends
   * refs and returns its hold (PrefillResult.release); when it throws, it has freed them.
   */
  prefill(job: PrefillJob, sink: PrefillSink, signal: AbortSignal): Promise<PrefillResult>;
}
