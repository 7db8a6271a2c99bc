/**
 * Engine: the TypeScript face of the native engine, for every caller (the role processes,
 * the benchmarks, the tests). Loads a model for one role (from a model directory through
 * the checkpoint layer, or from a ready ModelLoadSpec), runs one step per call (plans are
 * validated here first) and exposes info and stats. AttentionLink and FfnServer join an
 * engine to its AFD topology.
 *
 *   const engine = await Engine.load(modelDir, { role: 'colocated', threads: 2 });
 *   const out = await engine.step(plan);   // StepPlan / StepResult from '@afd/shared'
 *   engine.close();
 *
 * A plan with mask rows and no tokenMask defers its mask: the step runs its layers, then
 * waits (60 s at most) for the mask before sampling, so the host computes it meanwhile:
 *   const p = engine.step(plan); engine.provideTokenMask(mask); const out = await p;
 */
import { defersTokenMask, validateStepPlan, type RankStats, type StepPlan, type StepResult } from '@afd/shared';
import { buildLoadSpec } from './checkpoint/loadSpec.js';
import { assertEngineBuilds } from './engineKinds.js';
import { expertStatsOf, toRankStats } from './rankStats.js';
import { loadAddon, type KvShareDescriptor, type NativeAddon, type NativeEngine, type NativeEngineInfo, type NativeEngineOptions, type NativeEngineStats, type NativeExpertStats } from './addon.js';
import { isMoeLayer, type ModelLoadSpec, type ModelRole } from './modelSpec.js';

/** Options of Engine.load. */
export interface EngineLoadOptions extends NativeEngineOptions {
  /** Role to build when loading from a directory (default colocated). */
  role?: ModelRole;
  /** Router on the attention role (directory loads; MoE only). */
  computeGateOnAttention?: boolean;
}

/** The addon classes an engine is built and joined by: the product addon, or the testing addon (a superset). */
export type EngineAddon = Pick<NativeAddon, 'Engine' | 'AttentionLink' | 'FfnServer'>;

/** Each wrapper's raw engine and the addon that made it, reachable inside native/ only through nativeEngineOf / engineAddonOf. */
const natives = new WeakMap<Engine, { native: NativeEngine; addon: EngineAddon }>();

function nativeOf(engine: Engine, caller: string): { native: NativeEngine; addon: EngineAddon } {
  const entry = natives.get(engine);
  if (!entry) throw new Error(`${caller}: not an Engine made by Engine.load`);
  return entry;
}

/**
 * The raw native engine behind `engine`: for native's own wrappers (AttentionLink,
 * FfnServer) and tests of the C++ guards; not part of the public face (index.ts).
 */
export function nativeEngineOf(engine: Engine): NativeEngine {
  return nativeOf(engine, 'nativeEngineOf').native;
}

/** The addon that built `engine`: its AttentionLink and FfnServer must come from the same addon binary. */
export function engineAddonOf(engine: Engine): EngineAddon {
  return nativeOf(engine, 'engineAddonOf').addon;
}

export class Engine {
  private closed = false;
  /** Steps with a deferred mask still to give, in submission order: true = the native engine waits for it, false = the plan check refused it. */
  private readonly deferredSteps: boolean[] = [];

  private constructor(
    private readonly native: NativeEngine,
    addon: EngineAddon,
    /** What was loaded. */
    readonly info: NativeEngineInfo,
    /** The load spec the engine was built from. */
    readonly spec: ModelLoadSpec,
  ) {
    natives.set(this, { native, addon });
  }

  /** Loads a model directory (HF layout) or a ModelLoadSpec. */
  static async load(model: string | ModelLoadSpec, options: EngineLoadOptions = {}): Promise<Engine> {
    return Engine.loadWith(loadAddon(), model, options);
  }

  /**
   * Engine.load on a given addon binary: tests load engines of test-only backends
   * ("cpu-graphs") on the testing addon (native/src/testing/testingAddon.ts).
   */
  static async loadWith(addon: EngineAddon, model: string | ModelLoadSpec, options: EngineLoadOptions = {}): Promise<Engine> {
    const { role, computeGateOnAttention, ...nativeOptions } = options;
    const spec =
      typeof model === 'string'
        ? (await buildLoadSpec(model, role ?? 'colocated', { computeGateOnAttention: computeGateOnAttention ?? false })).spec
        : model;
    if (typeof model !== 'string' && role !== undefined && role !== model.role) {
      throw new Error(`Engine.load: options.role is ${role} but the load spec was built for ${model.role}; build the spec for the role you want`);
    }
    // Layer kinds and features C++ does not build yet (Qwen3-Next, Qwen3.5) are refused here, naming the family.
    assertEngineBuilds(spec.config);
    const native = new addon.Engine();
    const info = await native.load(spec, nativeOptions);
    return new Engine(native, addon, info, spec);
  }

  /**
   * Runs one step. Rejects with StepPlanError for an invalid plan, except for the per-entry
   * contents of the extras' lists (token ids, counts, bias values, the mask's rows): the
   * native engine checks those and rejects with an Error naming the field and the sequence
   * or index ("step plan: extras.seenTokenIds of sequence 3 list token 17 twice; ...").
   * A deferred mask is taken from the provideTokenMask calls in submission order; the call
   * that submits the step counts it even when the plan is refused (the mask given for it is
   * then dropped).
   */
  async step(plan: StepPlan): Promise<StepResult> {
    this.assertOpen('step');
    if (this.info.role === 'ffn') throw new Error('Engine.step: an ffn-role engine has no attention half; it serves ffnForward()');
    const deferred = defersTokenMask(plan);
    try {
      // The lists' contents are O(entries) (~0.5 ms a step at 64 sequences of 700 seen tokens): Engine::step checks them.
      validateStepPlan(plan, this.info, { contents: false });
    } catch (err) {
      if (deferred) this.deferredSteps.push(false);
      throw err;
    }
    if (deferred) this.deferredSteps.push(true);
    const out = await this.native.step(plan);
    const result: StepResult = { tokenIds: out.tokenIds, stepTimeMs: out.stepTimeMs };
    if (out.logits) result.logits = out.logits;
    if (out.logprobs) result.logprobs = out.logprobs;
    if (out.promptLogprobs) result.promptLogprobs = out.promptLogprobs;
    return result;
  }

  /** FFN half of one layer (ffn / colocated roles): hidden [numTokens, H] -> [numTokens, H]. */
  async ffnForward(layer: number, hidden: Float32Array, numTokens: number, routerLogits?: Float32Array): Promise<Float32Array> {
    this.assertOpen('ffnForward');
    if (!Number.isInteger(layer) || layer < 0 || layer >= this.info.numLayers) {
      throw new Error(`Engine.ffnForward: layer ${layer} is outside [0, ${this.info.numLayers})`);
    }
    return this.native.ffnForward(layer, hidden, numTokens, routerLogits);
  }

  /**
   * The deferred token mask of the oldest submitted step still without one (copied:
   * ceil(vocabSize / 32) int32 words per mask row, rows in maskRows order), or null to
   * withdraw it: that step fails with "token mask withdrawn". A mask of the wrong length
   * fails that step, naming the expected length. Throws when no step waits for a mask.
   */
  provideTokenMask(mask: Int32Array | null): void {
    this.assertOpen('provideTokenMask');
    if (mask !== null && !(mask instanceof Int32Array)) {
      throw new TypeError('Engine.provideTokenMask(mask): mask must be an Int32Array (allowed-token bitmask rows) or null (withdraw)');
    }
    const reached = this.deferredSteps.shift();
    if (reached === undefined) {
      throw new Error('Engine.provideTokenMask: no step waits for a token mask; submit step(plan) with maskRows and no tokenMask first');
    }
    if (reached) this.native.provideTokenMask(mask); // a step refused by the plan check took no mask
  }

  /**
   * Prefill / decode disaggregation: the bytes of KV blocks `blockIds` (distinct, in
   * [0, numKvBlocks)), to import into another engine of the same model. Layout: for each
   * layer with a paged cache (info.kvNumLayers, in layer order), each of its tensors (K then
   * V; MLA's latent row: K only; info.kvTensorsPerLayer), each block in the order given:
   * kvBlockSize x kvRowBytes bytes in the cache dtype (info.kvDtype). Takes the step mutex, so
   * it sees the KV of every step that resolved before it. Attention / colocated roles.
   */
  async exportKvBlocks(blockIds: Int32Array): Promise<Uint8Array> {
    this.assertKvRole('exportKvBlocks');
    assertBlockIds('exportKvBlocks', blockIds);
    return this.native.exportKvBlocks(blockIds);
  }

  /**
   * Writes KV blocks `blockIds` of this engine from `data` (another engine's exportKvBlocks
   * of the same model and KV layout: same kvDtype, kvNumLayers, kvTensorsPerLayer, kvRowBytes
   * and kvBlockSize). The ids may differ from the exporter's; `data` must hold exactly
   * blockIds.length blocks (the error says expected vs got).
   */
  async importKvBlocks(blockIds: Int32Array, data: Uint8Array): Promise<void> {
    this.assertKvRole('importKvBlocks');
    assertBlockIds('importKvBlocks', blockIds);
    assertBytes('importKvBlocks', data);
    return this.native.importKvBlocks(blockIds, data);
  }

  /**
   * The recurrent state of slot `slot` (models with gdn layers; info.stateBytesPerSlot
   * bytes): per gdn layer in layer order, its f32 conv state [C, W - 1] then its delta-rule
   * state [Hv, Dk, Dv]. With the KV of the sequence's full blocks it lets another engine
   * continue the sequence from the same position (hasState: it names its own slot).
   */
  async exportStateSlot(slot: number): Promise<Uint8Array> {
    this.assertKvRole('exportStateSlot');
    assertSlot('exportStateSlot', slot);
    return this.native.exportStateSlot(slot);
  }

  /** Writes slot `slot`'s recurrent state from another engine's exportStateSlot bytes (exactly stateBytesPerSlot). */
  async importStateSlot(slot: number, data: Uint8Array): Promise<void> {
    this.assertKvRole('importStateSlot');
    assertSlot('importStateSlot', slot);
    assertBytes('importStateSlot', data);
    return this.native.importStateSlot(slot, data);
  }

  /**
   * The same transfer by peer memory, between engines on one host (load option
   * kvShareable): where a peer maps this engine's KV cache and state; null when it was loaded
   * without kvShareable. The prefill side hands out block ids only after kvFence(), and
   * leaves those blocks alone until the peer has pulled them.
   */
  kvShareDescriptor(): KvShareDescriptor | null {
    this.assertKvRole('kvShareDescriptor');
    return this.native.kvShareDescriptor();
  }

  /** Resolves once every KV and state write of the steps so far is visible to peers. */
  async kvFence(): Promise<void> {
    this.assertKvRole('kvFence');
    return this.native.kvFence();
  }

  /**
   * Maps a peer's KV (another engine's kvShareDescriptor, of the same model and KV layout);
   * the id names it to pullKvBlocks / pullStateSlot / closeKvPeer. Rejects naming what
   * differs, or why the memory cannot be mapped (another host, the peer gone).
   */
  async openKvPeer(descriptor: KvShareDescriptor): Promise<number> {
    this.assertKvRole('openKvPeer');
    return this.native.openKvPeer(descriptor);
  }

  /** Copies the peer's blocks srcIds[i] into this engine's dstIds[i] (each list distinct, in range); resolves once written. */
  async pullKvBlocks(peer: number, srcIds: Int32Array, dstIds: Int32Array): Promise<void> {
    this.assertKvRole('pullKvBlocks');
    assertBlockIds('pullKvBlocks', srcIds);
    assertBlockIds('pullKvBlocks', dstIds);
    return this.native.pullKvBlocks(peer, srcIds, dstIds);
  }

  /** Copies the peer's recurrent-state slot `srcSlot` into this engine's `dstSlot`. */
  async pullStateSlot(peer: number, srcSlot: number, dstSlot: number): Promise<void> {
    this.assertKvRole('pullStateSlot');
    assertSlot('pullStateSlot', srcSlot);
    assertSlot('pullStateSlot', dstSlot);
    return this.native.pullStateSlot(peer, srcSlot, dstSlot);
  }

  /** Unmaps a peer (unknown ids are ignored). */
  closeKvPeer(peer: number): void {
    this.assertKvRole('closeKvPeer');
    this.native.closeKvPeer(peer);
  }

  /** Attention role: run the FFN half on `ffn` (an ffn-role engine of this process). */
  attachFfn(ffn: Engine): void {
    this.assertOpen('attachFfn');
    ffn.assertOpen('attachFfn');
    this.native.attachFfn(ffn.native);
  }

  /** Native counters (cheap; read at ~10 Hz). */
  stats(): NativeEngineStats {
    this.assertOpen('stats');
    return this.native.stats();
  }

  /**
   * Starts or stops the device profiler's capture range (CUDA: cudaProfilerStart / Stop, for
   * `ncu --profile-from-start off` or `nsys --capture-range=cudaProfilerApi`); nothing on the
   * CPU. Waits for the step in flight and the device's queued work.
   */
  profilerRange(start: boolean): void {
    this.assertOpen('profilerRange');
    this.native.profilerRange(start);
  }

  /**
   * The counters in the RankStats shape of shared/src/protocol/metrics.ts, with the weight
   * bytes this rank holds and, for a colocated or ffn engine of an MoE model, its experts;
   * expertParallel: the FFN rank's exchange counters (FfnServer.rankStats passes them).
   */
  rankStats(rank = 0, expertParallel: NativeExpertStats | null = null): RankStats {
    const experts = this.info.role === 'attention' ? undefined : expertStatsOf(this.spec, expertParallel);
    return toRankStats(this.stats(), this.info.role, rank, {
      moeLayers: this.spec.config.layers.map(isMoeLayer),
      weightBytes: this.info.residentWeightBytes,
      ...(experts ? { experts } : {}),
    });
  }

  /** Frees the model. Safe to call twice; in-flight steps finish first. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.native.close();
  }

  private assertOpen(what: string): void {
    if (this.closed) throw new Error(`Engine.${what}: the engine is closed`);
  }

  private assertKvRole(what: string): void {
    this.assertOpen(what);
    if (this.info.role === 'ffn') throw new Error(`Engine.${what}: an ffn-role engine has no KV cache or state slots; move them between attention or colocated engines`);
  }
}

function assertBlockIds(what: string, blockIds: unknown): void {
  if (!(blockIds instanceof Int32Array)) throw new TypeError(`Engine.${what}: blockIds must be an Int32Array`);
}

function assertBytes(what: string, data: unknown): void {
  if (!(data instanceof Uint8Array)) throw new TypeError(`Engine.${what}: data must be a Uint8Array (or Buffer)`);
}

function assertSlot(what: string, slot: unknown): void {
  if (typeof slot !== 'number' || !Number.isInteger(slot)) throw new TypeError(`Engine.${what}: slot must be an integer (got ${String(slot)})`);
}
