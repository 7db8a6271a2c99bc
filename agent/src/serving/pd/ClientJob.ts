/**
 * One prefill job on the decode rank's side: reassembles its chunks from `kv`/`state`/`part`
 * frames, checks them against the layout (size, range, each block once, one chunk at a time)
 * and, on `done`, that every block (and the state) came. Whole chunks go to the caller's
 * handlers; a violation throws KvTransferProtocolError.
 *
 * A peer job (`peer` given: the connection maps the prefill rank's KV) gets `kvref` and
 * `stateref` instead, checked the same way (range, each block once, the state once, all of
 * them by `done`), handed to onBlockRefs / onStateRef with the link to copy them through.
 */
import type { KvPeerLink } from '../engineLike.js';
import { KvTransferProtocolError } from './errors.js';
import { kvChunkBytes, type DoneMessage, type KvMessage, type KvRefMessage, type KvWireLayout, type PartMessage, type StateMessage, type StateRefMessage } from './kvMessages.js';
import type { PrefillJob } from './PrefillService.js';

export interface PrefillHandlers {
  /** Aborts the job: the promise rejects (with the signal's reason, an AbortError by default) and the rank is told to cancel. */
  signal?: AbortSignal;
  /** Blocks [blockOffset, blockOffset + numBlocks) in the engine's export format. The next frames wait for the promise. */
  onBlocks(blockOffset: number, numBlocks: number, data: Uint8Array): Promise<void> | void;
  /** The recurrent state (layout.stateBytes > 0 only). */
  onState?(data: Uint8Array): Promise<void> | void;
  /**
   * A peer job's blocks [blockOffset, blockOffset + numBlocks) are the prefill rank's blocks
   * srcIds: copy them through `peer` before the promise resolves. Without it jobs go as bytes.
   */
  onBlockRefs?(blockOffset: number, numBlocks: number, srcIds: number[], peer: KvPeerLink): Promise<void> | void;
  /** A peer job's recurrent state is in the prefill rank's slot `slot`. */
  onStateRef?(slot: number, peer: KvPeerLink): Promise<void> | void;
}

export interface PrefillTransferResult {
  /** The prefill's engine time on the prefill rank. */
  prefillMs: number;
  /** Prompt tokens the prefill rank found in its prefix cache. */
  cachedTokens: number;
  /** Payload bytes received (KV and state); a peer job's: the bytes of the blocks (and state) copied. */
  bytes: number;
  /** How the KV came: over the socket, or copied from the prefill rank's memory. */
  transport: 'peer' | 'tcp';
  /** From the request sent to `done` received. */
  transferMs: number;
}

interface Assembly {
  kind: 'kv' | 'state';
  blockOffset: number;
  numBlocks: number;
  data: Uint8Array;
  filled: number;
}

export class ClientJob {
  private readonly blockSeen: Uint8Array;
  private blocksSeen = 0;
  private stateSeen = false;
  private assembly: Assembly | null = null;
  private payloadBytes = 0;
  private handedOver = false;
  /** The last ref handler's promise (settled). */
  private lastRef: Promise<unknown> = Promise.resolve();
  readonly startedAt = performance.now();

  constructor(
    readonly job: PrefillJob,
    private readonly layout: KvWireLayout,
    private readonly handlers: PrefillHandlers,
    /** The peer link of a peer job; null: its KV comes as bytes. */
    readonly peer: KvPeerLink | null = null,
  ) {
    this.blockSeen = new Uint8Array(job.numBlocks);
  }

  /** True once a chunk was handed to onBlocks or onState (or a ref to onBlockRefs / onStateRef). */
  get delivered(): boolean {
    return this.handedOver;
  }

  /**
   * Resolves once the handler last called has settled: a peer copy in flight must end before
   * the prefill rank frees its blocks, and a copy or import in flight before the caller frees
   * the blocks it writes.
   */
  idle(): Promise<void> {
    return this.lastRef.then(() => undefined);
  }

  onKvRef(m: KvRefMessage): Promise<void> {
    this.expectNoAssembly('kvref');
    const peer = this.expectPeer('kvref');
    if (m.blockIds.length !== m.numBlocks) this.violation(`a kvref of ${m.numBlocks} blocks names ${m.blockIds.length} block ids`);
    this.claimBlocks(m.blockOffset, m.numBlocks);
    this.payloadBytes += kvChunkBytes(this.layout, m.numBlocks);
    return this.handOver(() => this.handlers.onBlockRefs!(m.blockOffset, m.numBlocks, m.blockIds, peer));
  }

  onStateRef(m: StateRefMessage): Promise<void> {
    this.expectNoAssembly('stateref');
    const peer = this.expectPeer('stateref');
    this.claimState();
    this.payloadBytes += this.layout.stateBytes;
    const onStateRef = this.handlers.onStateRef;
    if (!onStateRef) throw new KvTransferProtocolError(`prefill ${this.job.id}: the layout has a recurrent state but no onStateRef handler was given`);
    return this.handOver(() => onStateRef(m.slot, peer));
  }

  private handOver(call: () => Promise<void> | void): Promise<void> {
    this.handedOver = true;
    // Through a promise: a handler's error (a failed copy) is the job's, never a protocol violation.
    const p = Promise.resolve().then(call);
    this.lastRef = p.catch(() => undefined);
    return p;
  }

  private expectPeer(what: string): KvPeerLink {
    if (!this.peer) this.violation(`a ${what} arrived for a job that asked for bytes`);
    return this.peer;
  }

  onKv(m: KvMessage, payload: Uint8Array): Promise<void> | void {
    this.expectNoAssembly('kv');
    if (this.peer) this.violation('a kv chunk arrived for a peer job');
    const end = m.blockOffset + m.numBlocks;
    if (end > this.job.numBlocks) this.violation(`blocks [${m.blockOffset}, ${end}) are beyond the ${this.job.numBlocks} asked for`);
    const expected = kvChunkBytes(this.layout, m.numBlocks);
    if (m.totalBytes !== expected) this.violation(`a chunk of ${m.numBlocks} blocks must be ${expected} bytes (layout), the rank sent ${m.totalBytes}`);
    this.claimBlocks(m.blockOffset, m.numBlocks);
    return this.begin({ kind: 'kv', blockOffset: m.blockOffset, numBlocks: m.numBlocks, data: new Uint8Array(0), filled: 0 }, m.totalBytes, payload);
  }

  onState(m: StateMessage, payload: Uint8Array): Promise<void> | void {
    this.expectNoAssembly('state');
    if (this.peer) this.violation('a state chunk arrived for a peer job');
    if (this.layout.stateBytes === 0) this.violation('a state arrived but the layout has none (stateBytes 0)');
    if (m.totalBytes !== this.layout.stateBytes) this.violation(`the state must be ${this.layout.stateBytes} bytes (layout), the rank sent ${m.totalBytes}`);
    this.claimState();
    return this.begin({ kind: 'state', blockOffset: 0, numBlocks: 0, data: new Uint8Array(0), filled: 0 }, m.totalBytes, payload);
  }

  onPart(m: PartMessage, payload: Uint8Array): Promise<void> | void {
    const a = this.assembly;
    if (!a) this.violation('a part frame arrived with no chunk in progress');
    if (a.filled + payload.byteLength > a.data.byteLength) {
      this.violation(`part frames overrun the chunk: ${a.filled + payload.byteLength} of ${a.data.byteLength} bytes (${m.payloadBytes} in this part)`);
    }
    a.data.set(payload, a.filled);
    a.filled += payload.byteLength;
    this.payloadBytes += payload.byteLength;
    return a.filled === a.data.byteLength ? this.complete(a) : undefined;
  }

  /** Checks that the job is complete; returns its result. */
  onDone(m: DoneMessage): PrefillTransferResult {
    if (this.assembly) this.violation(`done arrived with a chunk at ${this.assembly.filled} of ${this.assembly.data.byteLength} bytes`);
    if (this.blocksSeen < this.job.numBlocks) {
      this.violation(`done arrived after ${this.blocksSeen} of ${this.job.numBlocks} blocks (block ${this.blockSeen.indexOf(0)} is missing)`);
    }
    if (this.layout.stateBytes > 0 && !this.stateSeen) this.violation('done arrived without the recurrent state');
    return { prefillMs: m.prefillMs, cachedTokens: m.cachedTokens, bytes: this.payloadBytes, transferMs: performance.now() - this.startedAt, transport: this.peer ? 'peer' : 'tcp' };
  }

  private claimBlocks(blockOffset: number, numBlocks: number): void {
    const end = blockOffset + numBlocks;
    if (end > this.job.numBlocks) this.violation(`blocks [${blockOffset}, ${end}) are beyond the ${this.job.numBlocks} asked for`);
    for (let b = blockOffset; b < end; b++) if (this.blockSeen[b]) this.violation(`block ${b} arrived twice`);
    this.blockSeen.fill(1, blockOffset, end);
    this.blocksSeen += numBlocks;
  }

  private claimState(): void {
    if (this.layout.stateBytes === 0) this.violation('a state arrived but the layout has none (stateBytes 0)');
    if (this.stateSeen) this.violation('the state arrived twice');
    this.stateSeen = true;
  }

  private begin(a: Assembly, totalBytes: number, payload: Uint8Array): Promise<void> | void {
    if (payload.byteLength > totalBytes) this.violation(`a ${a.kind} frame carries ${payload.byteLength} bytes of a ${totalBytes}-byte chunk`);
    this.payloadBytes += payload.byteLength;
    if (payload.byteLength === totalBytes) return this.complete({ ...a, data: payload, filled: totalBytes });
    a.data = new Uint8Array(totalBytes);
    a.data.set(payload, 0);
    a.filled = payload.byteLength;
    this.assembly = a;
  }

  private complete(a: Assembly): Promise<void> | void {
    this.assembly = null;
    this.handedOver = true;
    if (a.kind !== 'kv' && !this.handlers.onState) throw new KvTransferProtocolError(`prefill ${this.job.id}: the layout has a recurrent state but no onState handler was given`);
    const pending = a.kind === 'kv' ? this.handlers.onBlocks(a.blockOffset, a.numBlocks, a.data) : this.handlers.onState!(a.data);
    // An import in flight writes into the caller's blocks like a peer copy: idle() waits for it too.
    if (pending) this.lastRef = Promise.resolve(pending).then(() => undefined, () => undefined);
    return pending;
  }

  private expectNoAssembly(what: string): void {
    const a = this.assembly;
    if (a) this.violation(`a ${what} frame arrived while a ${a.kind} chunk was at ${a.filled} of ${a.data.byteLength} bytes`);
  }

  private violation(what: string): never {
    throw new KvTransferProtocolError(`prefill ${this.job.id}: ${what}`);
  }
}
