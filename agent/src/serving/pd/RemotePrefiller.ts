/**
 * An attention rank's use of its launch's prefill ranks (prefill/decode disaggregation).
 *
 * For a prompt of at least `minPromptTokens` tokens not already in this rank's prefix
 * cache, it holds blocks for the prompt's first full blocks (all but the last token, so this
 * rank still computes at least one token and samples the first output itself, with every
 * sampling option the request has), asks a prefill rank to compute them, and writes the KV
 * (and a hybrid model's recurrent state) into the held blocks as it arrives. The request is
 * then queued against the hold (ServingEngine.submitAllAsync).
 *
 * Which prefill rank: the prompt's first block decides a rendezvous choice among the ranks
 * that are up (the same prefix goes to the same prefill rank, whose prefix cache holds it),
 * unless that rank has `overloadSlack` more prefills in flight than the least loaded one,
 * which then gets it. A prefill rank lost mid-request (nothing reached the client yet) is
 * tried again on another one; when none serves, or the prefill fails there, or this rank
 * has no free blocks to hold, the prompt is prefilled here, counted by reason.
 *
 * A link in peer memory (same host, the prefill rank's KV mapped here) hands over block ids:
 * this rank copies the blocks (and the state slot) into the held ones itself. A failed copy
 * fails the prompt (prefilled here) and its connection goes on with bytes. With transport
 * 'peer', a link that cannot use peer memory is not used (peer_unavailable, logged with why).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { PdTransport } from '@afd/shared';
import type { Logger } from '../../util/logger.js';
import type { KvLayout, KvPeerLink, KvTransferEngine } from '../engineLike.js';
import { BlockHashChain, rootHashOf } from '../kv/blockHash.js';
import type { Scheduler } from '../scheduler/Scheduler.js';
import type { GenerateParams } from '../ServingEngine.js';
import { kvConverter, type KvConverter } from './kvLayoutMatch.js';
import type { ImportedPrompt, PdTransfer, RemotePrefillLike } from './remotePrefill.js';

/** One prefill rank as this rank reaches it (KvTransferClient). */
export interface PrefillLink {
  readonly rank: number;
  /** Prefills of this rank in flight there. */
  readonly inFlight: number;
  readonly isConnected: boolean;
  /** How the next prefill's KV travels (peer memory on one host, or bytes). */
  readonly transport: 'peer' | 'tcp';
  /** Why a connected link does not use peer memory; null when it does. */
  readonly peerProblem: string | null;
  /** Connects (hello / welcome) if not connected; the prefill rank's KV layout. */
  connect(): Promise<KvLayout>;
  prefill(
    job: { id: string; tokenIds: number[]; numBlocks: number; cacheSalt?: string },
    handlers: {
      signal?: AbortSignal;
      onBlocks(blockOffset: number, numBlocks: number, data: Uint8Array): Promise<void> | void;
      onState(data: Uint8Array): Promise<void> | void;
      onBlockRefs(blockOffset: number, numBlocks: number, srcIds: number[], peer: KvPeerLink): Promise<void> | void;
      onStateRef(slot: number, peer: KvPeerLink): Promise<void> | void;
    },
  ): Promise<{ prefillMs: number; cachedTokens: number; bytes: number; transferMs: number; transport: 'peer' | 'tcp' }>;
}

/** Why a prompt was prefilled on the attention rank itself. */
export type LocalPrefillReason = 'short' | 'cached_here' | 'prompt_logprobs' | 'samples_with_state' | 'no_free_blocks' | 'prefill_ranks_down' | 'prefill_failed' | 'layout_mismatch' | 'peer_unavailable';

/** What the metrics see (PdMetrics). */
export interface PdObserver {
  onTransfer(t: PdTransfer): void;
  onLocalPrefill(reason: LocalPrefillReason): void;
  onRankLost(prefillRank: number): void;
}

export interface RemotePrefillerOptions {
  links: readonly PrefillLink[];
  engine: KvTransferEngine;
  /** Shorter prompts (or what is left of one after this rank's prefix cache) are prefilled here. */
  minPromptTokens: number;
  log: Logger;
  observer?: PdObserver;
  /** In-flight prefills the prefix's own prefill rank may carry beyond the least loaded one (default 2). */
  overloadSlack?: number;
  /** 'peer': only links in peer memory are used (default auto: whatever each link does). */
  transport?: PdTransport;
}

export class RemotePrefiller implements RemotePrefillLike {
  /** Per prefill rank: the converter from its layout (null: not compatible, with the reason logged once). */
  private readonly converters = new Map<number, KvConverter | null>();
  /** Per prefill rank: the last reason logged for not using it in peer memory. */
  private readonly peerWarned = new Map<number, string>();

  constructor(private readonly opts: RemotePrefillerOptions) {
    if (opts.links.length === 0) throw new Error('RemotePrefiller: no prefill ranks');
  }

  async importFor(params: GenerateParams, scheduler: Scheduler): Promise<ImportedPrompt | null> {
    const bs = scheduler.blocks.kvBlockSize;
    const prompt = params.promptIds;
    const numBlocks = Math.floor((prompt.length - 1) / bs);
    const skip = this.skipReason(params, scheduler, numBlocks);
    if (skip) {
      this.opts.observer?.onLocalPrefill(skip);
      return null;
    }
    let retries = 0;
    let noPeer = false;
    for (const link of this.prefillRankOrder(prompt, bs)) {
      const converter = await this.converterFor(link);
      if (converter === undefined) continue; // down: the next one
      if (this.opts.transport === 'peer' && link.transport !== 'peer') {
        this.warnNoPeer(link);
        noPeer = true;
        continue;
      }
      if (converter === null) return this.local('layout_mismatch');
      const hold = scheduler.holdForImport(numBlocks);
      if (!hold) return this.local('no_free_blocks');
      const { engine } = this.opts;
      const t0 = performance.now();
      try {
        const r = await link.prefill(
          { id: randomUUID(), tokenIds: prompt.slice(0, numBlocks * bs), numBlocks, ...(params.cacheSalt !== undefined ? { cacheSalt: params.cacheSalt } : {}) },
          {
            onBlocks: (offset, n, data) => engine.importKvBlocks(Int32Array.from(hold.blockIds.slice(offset, offset + n)), converter(data)),
            onState: (data) => engine.importStateSlot(hold.stateSlot!, data),
            onBlockRefs: (offset, n, srcIds, peer) => peer.pullKvBlocks(Int32Array.from(srcIds), Int32Array.from(hold.blockIds.slice(offset, offset + n))),
            onStateRef: (slot, peer) => peer.pullStateSlot(slot, hold.stateSlot!),
          },
        );
        const transfer: PdTransfer = { prefillRank: link.rank, tokens: hold.numTokens, bytes: r.bytes, transferMs: r.transferMs || performance.now() - t0, prefillMs: r.prefillMs, cachedTokens: r.cachedTokens, retries, transport: r.transport };
        this.opts.observer?.onTransfer(transfer);
        return { hold, cachedTokens: Math.min(r.cachedTokens, hold.numTokens), transfer };
      } catch (err) {
        scheduler.imports.release(hold);
        const e = err as Error;
        if (e.name === 'PrefillRankLostError') {
          this.opts.log.warn({ prefillRank: link.rank, err: e.message }, 'prefill rank lost mid-prefill; trying another');
          this.opts.observer?.onRankLost(link.rank);
          retries++;
          continue;
        }
        this.opts.log.warn({ prefillRank: link.rank, err: e.message }, 'remote prefill failed; prefilling here');
        return this.local('prefill_failed');
      }
    }
    return this.local(noPeer ? 'peer_unavailable' : 'prefill_ranks_down');
  }

  /** Logs (once per reason and prefill rank) why a link is not used with transport 'peer'. */
  private warnNoPeer(link: PrefillLink): void {
    const reason = link.peerProblem ?? 'the link moves KV over TCP';
    if (this.peerWarned.get(link.rank) === reason) return;
    this.peerWarned.set(link.rank, reason);
    this.opts.log.warn({ prefillRank: link.rank, reason }, 'prefill rank not used: transport peer, and this link cannot use peer memory');
  }

  /** Why this request is prefilled here without asking, or null. */
  private skipReason(params: GenerateParams, scheduler: Scheduler, numBlocks: number): LocalPrefillReason | null {
    if (params.promptIds.length < this.opts.minPromptTokens || numBlocks === 0) return 'short';
    if (params.promptLogprobs !== undefined) return 'prompt_logprobs'; // every prompt row is computed here
    if ((params.n ?? 1) > 1 && scheduler.stateSlots !== null) return 'samples_with_state'; // one imported state, n slots
    if (scheduler.blocks.prefixCaching) {
      const bs = scheduler.blocks.kvBlockSize;
      const chain = new BlockHashChain(rootHashOf(params.cacheSalt), bs);
      const hashes = chain.upTo(numBlocks, (start, count) => params.promptIds.slice(start, start + count));
      const hit = scheduler.blocks.cachedPrefix(hashes, numBlocks).length * bs;
      if (params.promptIds.length - hit < this.opts.minPromptTokens) return 'cached_here';
    }
    return null;
  }

  private local(reason: LocalPrefillReason): null {
    this.opts.observer?.onLocalPrefill(reason);
    return null;
  }

  /**
   * The converter for a link's layout: undefined when it cannot be reached now, null when
   * its layout can never be written here (logged once, with why).
   */
  private async converterFor(link: PrefillLink): Promise<KvConverter | null | undefined> {
    const known = this.converters.get(link.rank);
    if (known !== undefined && link.isConnected) return known;
    let layout: KvLayout;
    try {
      layout = await link.connect();
    } catch (err) {
      this.opts.log.debug({ prefillRank: link.rank, err: (err as Error).message }, 'prefill rank unreachable');
      return undefined;
    }
    let converter: KvConverter | null;
    try {
      converter = kvConverter(layout, this.opts.engine.kvLayout);
    } catch (err) {
      if (known !== null) this.opts.log.error({ prefillRank: link.rank, err: (err as Error).message }, 'prefill rank unusable');
      converter = null;
    }
    this.converters.set(link.rank, converter);
    return converter;
  }

  /** Prefill ranks in the order a prompt tries them: its first block's rendezvous rank first unless overloaded, then by load. */
  prefillRankOrder(prompt: readonly number[], bs: number): PrefillLink[] {
    const links = [...this.opts.links];
    const key = createHash('sha256').update(new Uint8Array(Int32Array.from(prompt.slice(0, bs)).buffer)).digest();
    const weight = (l: PrefillLink): number => createHash('sha256').update(key).update(String(l.rank)).digest().readUInt32BE(0);
    const byLoad = [...links].sort((a, b) => Number(b.isConnected) - Number(a.isConnected) || a.inFlight - b.inFlight || a.rank - b.rank);
    const preferred = [...links].sort((a, b) => weight(b) - weight(a))[0]!;
    const least = byLoad[0]!;
    const slack = this.opts.overloadSlack ?? 2;
    const first = preferred.inFlight - least.inFlight > slack ? least : preferred;
    return [first, ...byLoad.filter((l) => l !== first)];
  }
}
