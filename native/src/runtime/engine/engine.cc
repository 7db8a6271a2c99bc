#include "runtime/engine/engine.h"

#include <algorithm>

#include "core/elapsed.h"
#include "runtime/registry.h"

namespace afd {
namespace {

using Clock = std::chrono::steady_clock;

// Times collect(): FFN compute (colocated) or the wait for the FFN peer (attention).
class TimedExecutor : public FfnExecutor {
 public:
  // colocated: the wait is FFN compute; split roles: it is the bubble.
  TimedExecutor(FfnExecutor& inner, EngineStats& stats, bool colocated) : inner_(inner), stats_(stats), colocated_(colocated) {}
  void beginStep(const FfnStepInfo& info) override { inner_.beginStep(info); }
  void submit(int layer, int stage, const Tensor& hidden, const Tensor* logits) override {
    inner_.submit(layer, stage, hidden, logits);
  }
  void collect(int layer, int stage, Tensor& out) override {
    const auto t0 = Clock::now();
    inner_.collect(layer, stage, out);
    (colocated_ ? stats_.ffnComputeUs : stats_.ffnWaitUs) += usSince(t0);
  }
  void endStep() override { inner_.endStep(); }

 private:
  FfnExecutor& inner_;
  EngineStats& stats_;
  bool colocated_;
};

}  // namespace

int kvBlockCount(const EngineOptions& o, uint64_t bytesPerBlock, uint64_t freeBytes) {
  if (o.numKvBlocks > 0) return o.numKvBlocks;
  uint64_t budget = o.kvCacheBytes;
  if (o.kvMemoryFraction > 0 && freeBytes > 0) {
    const double usable = static_cast<double>(freeBytes) * o.kvMemoryFraction - static_cast<double>(kKvWorkspaceReserveBytes);
    AFD_CHECK(usable >= static_cast<double>(bytesPerBlock),
              "KV cache: " << (static_cast<double>(freeBytes) / (1 << 30)) << " GiB free after the weights x kvMemoryFraction "
                           << o.kvMemoryFraction << " less " << (kKvWorkspaceReserveBytes >> 20)
                           << " MiB for activations leaves no room for one block of " << (bytesPerBlock >> 10)
                           << " KiB; raise the fraction or free the device");
    budget = static_cast<uint64_t>(usable);
  }
  return static_cast<int>(std::clamp<uint64_t>(budget / bytesPerBlock, 1, kMaxKvBlocks));
}

Engine::Engine(ModelLoadSpec spec, const EngineOptions& options) : spec_(std::move(spec)), options_(options) {
  const ModelConfig& c = spec_.config;
  validateModelConfig(c);
  backend_ = createBackend(options.backend);
  store_ = std::make_unique<WeightStore>(spec_, *backend_, fusedTensors(c));
  const bool gateOnAttn = spec_.computeGateOnAttention;
  if (spec_.role != ModelRole::Ffn) attention_ = std::make_unique<AttentionModel>(c, *store_, *backend_, gateOnAttn);
  if (spec_.role != ModelRole::Attention) {
    AFD_CHECK(!spec_.expertRange || spec_.role == ModelRole::Ffn,
              "an expert range (expert parallelism) is for the ffn role only, not " << modelRoleName(spec_.role));
    const ExpertRange all{0, std::max(0, c.numExperts)};
    ffn_ = std::make_unique<FfnModel>(c, *store_, *backend_, gateOnAttn, spec_.expertRange.value_or(all));
  }
  store_->checkAllBound(modelRoleName(spec_.role));
  stats_ = std::make_unique<EngineStats>(c.numLayers);
  info_.role = modelRoleName(spec_.role);
  info_.arch = c.arch;
  info_.backend = backend_->name();
  info_.threads = backend_->threads();
  info_.numLayers = c.numLayers;
  info_.vocabSize = c.vocabSize;
  info_.hiddenSize = c.hiddenSize;
  info_.residentWeightBytes = store_->residentBytes();
  info_.numWeightTensors = store_->numTensors();
  // The policy already holds the debugging override AFD_ENGINE_GRAPHS=off (binding/js-convert.cc).
  graphsOn_ = options.graphs.policy == GraphPolicy::DecodeOnly && attention_ && backend_->supportsGraphCapture();
  if (graphsOn_) validateGraphBuckets(options.graphs.batchBuckets);
  if (attention_) {
    const DType kvDtype = options.kvDtype.value_or(backend_->activationDtype());
    const KvLayout kvLayout = kvLayoutOf(c);  // MLA: the latent + rope key per token
    const std::string* share = options.kvShareable ? &options.kvShareDir : nullptr;  // kv-peer.h
    // gdn layers: their state slots first, so the KV cache is sized from what is left.
    if (c.hasAttentionKind(AttentionKind::Gdn)) {
      try {
        state_ = std::make_unique<RecurrentState>(*backend_, c, options.numStateSlots, graphsOn_, share);
      } catch (const Error& e) {
        AFD_FAIL("the recurrent state of " << options.numStateSlots << " sequences ("
                                           << (static_cast<double>(recurrentStateBytesPerSlot(c)) * options.numStateSlots / (1 << 30))
                                           << " GiB) did not fit on " << backend_->name() << " after the weights: " << e.what()
                                           << "; lower numStateSlots (the serving max-num-seqs)");
      }
      info_.numStateSlots = options.numStateSlots;
      info_.stateBytesPerSlot = recurrentStateBytesPerSlot(c);
    }
    const std::vector<bool> paged = pagedKvLayers(c);
    const uint64_t perBlock =
        kvBytesPerBlock(static_cast<int>(std::count(paged.begin(), paged.end(), true)), options.kvBlockSize, kvLayout, kvDtype);
    const int numBlocks = kvBlockCount(options, perBlock, backend_->freeMemoryBytes());
    // Graphs: one extra block that no sequence owns takes the pad rows' K/V.
    if (graphsOn_) padBlock_ = numBlocks;
    try {
      kv_ = std::make_unique<PagedKvCache>(*backend_, paged, numBlocks + (graphsOn_ ? 1 : 0), options.kvBlockSize, kvLayout,
                                           kvDtype, share);
    } catch (const Error& e) {
      AFD_FAIL("the KV cache of " << numBlocks << " blocks (" << (static_cast<double>(perBlock) * numBlocks / (1 << 30))
                                  << " GiB) did not fit on " << backend_->name() << " after the weights: " << e.what()
                                  << "; lower --kv-cache-mib / kvMemoryFraction or free the device");
    }
    info_.kvBlockSize = options.kvBlockSize;
    info_.numKvBlocks = numBlocks;
    info_.kvBytesPerBlock = perBlock;
    info_.kvDtype = dtypeName(kvDtype);
    info_.kvNumLayers = static_cast<int>(std::count(paged.begin(), paged.end(), true));
    info_.kvTensorsPerLayer = kvLayout.latent ? 1 : 2;
    info_.kvRowBytes = static_cast<uint64_t>(kvLayout.numKvHeads) * static_cast<uint64_t>(kvLayout.headDim) * dtypeBytes(kvDtype);
    stats_->kvBlocksTotal = static_cast<uint64_t>(numBlocks);
    ws_ = std::make_unique<Workspace>(*backend_, spec_.config);
  }
  if (spec_.role == ModelRole::Colocated) {
    localExecutor_ = std::make_unique<LocalFfnExecutor>(*ffn_);
    executor_ = localExecutor_.get();
  }
}

Engine::~Engine() = default;

void Engine::setFfnExecutor(FfnExecutor* executor) {
  std::lock_guard<std::mutex> lock(mu_);
  AFD_CHECK(spec_.role == ModelRole::Attention, "only an attention-role engine takes an FFN executor (this one is " << info_.role << ")");
  executor_ = executor;
  // Graphs captured with the previous executor point at its buffers and communicators.
  graphs_.clear();
  warmed_.clear();
  graphExecutor_ = nullptr;
}

void Engine::ffnForward(int layer, const void* hidden, int64_t numTokens, const float* routerLogits, void* out) {
  std::lock_guard<std::mutex> lock(mu_);
  AFD_CHECK(ffn_, "ffnForward needs an engine loaded with role ffn or colocated (this one is " << info_.role << ")");
  const ModelConfig& c = spec_.config;
  const auto t0 = Clock::now();
  const int64_t H = c.hiddenSize;
  const DType act = backend_->activationDtype();
  const size_t bytes = static_cast<size_t>(numTokens * H) * dtypeBytes(act);
  Buffer in(backend_.get(), bytes), res(backend_.get(), bytes), lg;
  backend_->copyToDevice(in.data(), hidden, bytes);
  Tensor inT = in.view(act, {numTokens, H}), outT = res.view(act, {numTokens, H}), lgT;
  if (routerLogits != nullptr) {
    lg = Buffer(backend_.get(), numTokens * c.numExperts * 4);
    backend_->copyToDevice(lg.data(), routerLogits, numTokens * c.numExperts * 4);
    lgT = lg.view(DType::F32, {numTokens, c.numExperts});
  }
  ffn_->forward(layer, inT, routerLogits ? &lgT : nullptr, outT);
  backend_->copyToHost(out, res.data(), bytes);
  stats_->ffnComputeUs += usSince(t0);
}

void Engine::runLayers(const StepLayout& layout, FfnExecutor& exec) {
  const ModelConfig& c = spec_.config;
  const int64_t H = c.hiddenSize, nH = c.numHeads, nKv = c.numKvHeads, D = c.headDim, E = std::max(1, c.numExperts);
  const int numStages = layout.numStages;
  const int* seqBegin = layout.seqBegin;
  const int* tokBegin = layout.tokBegin;
  const int64_t T = tokBegin[numStages];
  Workspace& w = *ws_;
  Tensor hidden = w.hidden.view(DType::F32, {T, H}), normed = w.normed.view(w.act, {T, H});
  Tensor ffnOut = w.ffnOut.view(w.act, {T, H}), qkv = w.qkv.view(DType::F32, {T, (nH + 2 * nKv) * D});
  Tensor q = w.q.view(DType::F32, {T, nH, D}), attn = w.attn.view(DType::F32, {T, nH, D});
  Tensor logits = w.routerLogits.view(DType::F32, {T, E});
  const Device dev = backend_->device();
  Tensor positions(layout.positions, DType::I32, {T}, dev), slots(layout.slots, DType::I32, {T}, dev);
  Tensor tokenSeq(layout.tokenSeq, DType::I32, {T}, dev);
  Tensor tables(layout.blockTables, DType::I32, {seqBegin[numStages], layout.maxBlocksPerSeq}, dev);

  std::vector<AttentionStageInputs> in(numStages);
  std::vector<AttentionStageTensors> st(numStages);
  for (int s = 0; s < numStages; ++s) {
    const int64_t t0 = tokBegin[s], t1 = tokBegin[s + 1];
    in[s].positions = positions.rows(t0, t1);
    in[s].slotMapping = slots.rows(t0, t1);
    in[s].batch.tokenSeq = tokenSeq.rows(t0, t1);
    in[s].batch.positions = in[s].positions;
    in[s].batch.blockTables = tables.rows(seqBegin[s], seqBegin[s + 1]);
    in[s].batch.numSeqs = seqBegin[s + 1] - seqBegin[s];
    in[s].batch.maxBlocksPerSeq = layout.maxBlocksPerSeq;
    in[s].batch.maxQueryLen = layout.maxQueryLen[s];
    in[s].batch.maxContextLen = layout.maxContextLen[s];
    if (state_) {
      const int64_t S_s = seqBegin[s + 1] - seqBegin[s];
      Tensor stateSlots(layout.stateSlots + seqBegin[s], DType::I32, {S_s}, dev);
      Tensor hasState(layout.hasState + seqBegin[s], DType::I32, {S_s}, dev);
      Tensor seqStarts(layout.seqStarts + seqBegin[s] + s, DType::I32, {S_s + 1}, dev);
      in[s].linear = LinearAttentionBatch{seqStarts, stateSlots, hasState, static_cast<int>(S_s), layout.maxQueryLen[s]};
    }
    st[s] = AttentionStageTensors{hidden.rows(t0, t1), normed.rows(t0, t1), qkv.rows(t0, t1), q.rows(t0, t1),
                                  attn.rows(t0, t1),   logits.rows(t0, t1), Tensor{}};
  }
  // Every stage's kernels are chosen for the whole step's rows (DBO is bit-equal to one stage).
  backend_->setStepRows(T);
  for (int L = 0; L < c.numLayers; ++L) {
    for (int s = 0; s < numStages; ++s) {
      if (L > 0) {
        Tensor out = ffnOut.rows(tokBegin[s], tokBegin[s + 1]);
        exec.collect(L - 1, s, out);
        st[s].ffnOut = out;
      }
      attention_->forwardLayer(L, in[s], st[s], layerCacheA(L), layerCacheB(L));
      exec.submit(L, s, st[s].normed, attention_->routerOnAttention(L) ? &st[s].routerLogits : nullptr);
    }
  }
  for (int s = 0; s < numStages; ++s) {
    Tensor out = ffnOut.rows(tokBegin[s], tokBegin[s + 1]);
    exec.collect(c.numLayers - 1, s, out);
    attention_->finalNorm(st[s].hidden, out, st[s].normed);
  }
  backend_->setStepRows(0);  // the LM head runs at its own (sampled) rows
}

Tensor& Engine::layerCacheA(int layer) {
  return spec_.config.layers[layer].attention == AttentionKind::Gdn ? state_->conv(layer) : kv_->k(layer);
}

Tensor& Engine::layerCacheB(int layer) {
  return spec_.config.layers[layer].attention == AttentionKind::Gdn ? state_->delta(layer) : kv_->v(layer);
}

void Engine::sampleInto(const StepPlan& plan, const Tensor& logits, const std::vector<int32_t>& samplePos, StepResult& result) {
  const int64_t numSampled = logits.dim(0), V = logits.dim(1);
  SampledRows& rows = sampledRows_;
  rows.build(plan, samplePos, V);
  // Slots seeded this step, before any row reads them (a prompt chunk that samples nothing seeds too).
  if (rows.seeds().numSlots > 0) backend_->seedPenaltySlots(rows.seeds(), V);
  if (numSampled == 0) {  // nothing sampled: an empty logprobs result when a sequence asks
    if (rows.wantsLogprobs()) result.logprobs = std::move(rows.logprobs());
    return;
  }
  // A deferred mask: the layers and the LM head are queued (on a device, running); wait for it here.
  std::vector<int32_t> deferredMask;
  if (rows.masked()) {
    if (plan.extras->tokenMask == nullptr) {
      deferredMask = masks_.take(stepMaskTicket_);
      rows.setMask(deferredMask.data());
    }
    checkMaskRowsAllowAToken(rows.maskData(), numMaskRows(plan), V);
  }
  // Mask, bias and penalties in place (the workspace's logits; a graph step rewrites them on replay).
  Tensor processed = logits;
  if (rows.processes()) backend_->processLogits(processed, rows.processing());
  std::vector<int32_t> tokens(numSampled);
  backend_->sample(logits, rows.batch(), tokens.data());
  for (int s = 0, j = 0; s < plan.numSeqs; ++s)
    if (plan.sampleMask[s]) result.tokenIds[s] = tokens[j++];
  if (rows.wantsLogprobs()) result.logprobs = std::move(rows.logprobs());
  if (plan.returnLogits) {
    result.logits.resize(static_cast<size_t>(numSampled * V));
    backend_->copyToHost(result.logits.data(), logits.data, result.logits.size() * 4);
  }
  stats_->sampledTokens += numSampled;
}

// An eager step on the plan's own rows: inputs uploaded to the workspace, every layer,
// then the LM head and sampling on the sampled rows.
void Engine::stepEager(const StepPlan& plan, StepLayout layout, StepResult& result) {
  const ModelConfig& c = spec_.config;
  const int S = plan.numSeqs, T = plan.numTokens, B = kv_->blockSize(), numStages = layout.numStages;
  StepInputs& in = stepInputs_;
  in.reset(T, S, plan.maxBlocksPerSeq);
  std::copy(plan.tokenIds, plan.tokenIds + T, in.ids());
  std::copy(plan.positions, plan.positions + T, in.positions());
  std::copy(plan.blockTables, plan.blockTables + static_cast<int64_t>(S) * plan.maxBlocksPerSeq, in.tables());
  // Per token: its KV cache slot and its sequence's index within its stage; the last
  // token of each sampled sequence is a sampled row.
  std::vector<int32_t> samplePos;
  int64_t numSampled = 0;
  for (int s = 0; s < S; ++s) {
    const int stage = s < layout.seqBegin[1] ? 0 : 1;
    const int32_t* table = plan.blockTables + static_cast<int64_t>(s) * plan.maxBlocksPerSeq;
    for (int t = plan.tokenOffsets[s]; t < plan.tokenOffsets[s + 1]; ++t) {
      in.tokenSeq()[t] = s - layout.seqBegin[stage];
      in.slots()[t] = table[plan.positions[t] / B] * B + plan.positions[t] % B;
    }
    if (plan.sampleMask[s]) {
      in.sampleRows()[numSampled++] = plan.tokenOffsets[s + 1] - 1;
      samplePos.push_back(plan.contextLens[s]);
    }
  }
  if (state_) {
    for (int st = 0; st < numStages; ++st) {
      const int s0 = layout.seqBegin[st], s1 = layout.seqBegin[st + 1];
      for (int s = s0; s <= s1; ++s) in.seqStarts()[s + st] = plan.tokenOffsets[s] - plan.tokenOffsets[s0];
    }
    for (int s = 0; s < S; ++s) {
      in.stateSlots()[s] = plan.stateSlots[s];
      in.hasState()[s] = plan.positions[plan.tokenOffsets[s]] > 0 ? 1 : 0;  // position 0: a fresh sequence
    }
  }
  promptRows_.build(plan);
  std::copy(promptRows_.tokenRows().begin(), promptRows_.tokenRows().end(), in.promptRows());
  Backend& be = *backend_;
  ws_->reserve(T, S);
  const StepInputs::Device dev = in.upload(be, eagerInputs_);
  layout.setInputs(dev);

  Tensor hidden = ws_->hidden.view(DType::F32, {T, c.hiddenSize});
  be.embedding(Tensor(layout.ids, DType::I32, {T}, be.device()), attention_->embedTable(), hidden);
  TimedExecutor timed(*executor_, *stats_, spec_.role == ModelRole::Colocated);
  FfnStepInfo info;
  for (int s = 0; s < numStages; ++s) info.stageTokenCounts.push_back(layout.tokBegin[s + 1] - layout.tokBegin[s]);
  timed.beginStep(info);
  runLayers(layout, timed);
  timed.endStep();

  Tensor logits = ws_->logits.view(DType::F32, {numSampled, c.vocabSize});
  if (numSampled > 0) {
    Tensor last = ws_->lastHidden.view(ws_->act, {numSampled, c.hiddenSize});
    be.gatherRows(ws_->normed.view(ws_->act, {T, c.hiddenSize}), Tensor(layout.sampleRows, DType::I32, {numSampled}, be.device()),
                  last);
    be.lmHead(last, attention_->lmHeadWeight(), logits);
  }
  sampleInto(plan, logits, samplePos, result);
  if (promptRows_.wanted()) promptLogprobsInto(dev.promptRows, T, result);
}

int64_t Engine::reserveTokenMask(const StepPlan& plan) {
  return defersTokenMask(plan) ? masks_.reserve(numMaskRows(plan), maskWordsOf(spec_.config.vocabSize)) : -1;
}

StepResult Engine::step(const StepPlan& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto start = Clock::now();
  // A deferred mask's ticket, released however the step ends (a mask still to come is dropped).
  stepMaskTicket_ = plan.tokenMaskTicket >= 0 ? plan.tokenMaskTicket : reserveTokenMask(plan);
  struct ReleaseTicket {
    TokenMaskChannel& masks;
    int64_t& ticket;
    ~ReleaseTicket() {
      if (ticket >= 0) masks.release(ticket);
      ticket = -1;
    }
  } releaseTicket{masks_, stepMaskTicket_};
  AFD_CHECK(attention_, "step() needs an engine loaded with role colocated or attention (this one is " << info_.role
                                                                                                      << "; the FFN role serves ffnForward)");
  AFD_CHECK(executor_ != nullptr, "this attention-role engine has no FFN executor yet; attach the connector (or a local FFN engine) first");
  const ModelConfig& c = spec_.config;
  validateStepPlan(plan, c.vocabSize, kv_->blockSize(), info_.numKvBlocks);
  validateStateSlots(plan, info_.numStateSlots);
  const int S = plan.numSeqs, T = plan.numTokens, B = kv_->blockSize();
  const int numStages = plan.stageSplit < S ? 2 : 1;
  StepLayout layout;
  layout.numStages = numStages;
  layout.seqBegin[1] = numStages == 2 ? plan.stageSplit : S;
  layout.seqBegin[2] = S;
  layout.tokBegin[1] = plan.tokenOffsets[layout.seqBegin[1]];
  layout.tokBegin[2] = T;
  layout.maxBlocksPerSeq = plan.maxBlocksPerSeq;
  const int* seqBegin = layout.seqBegin;
  // Per sequence: token stats, the stages' longest query and context, the KV blocks in
  // use (each counted once), and whether every sequence decodes.
  bool decodeOnly = S > 0;
  blockStamps_.resize(static_cast<size_t>(info_.numKvBlocks), 0);
  if (++blockStamp_ == 0) {  // wrapped: forget every stamp
    std::fill(blockStamps_.begin(), blockStamps_.end(), 0);
    blockStamp_ = 1;
  }
  size_t usedBlocks = 0;
  for (int s = 0; s < S; ++s) {
    const int stage = s < seqBegin[1] ? 0 : 1;
    const int32_t* table = plan.blockTables + static_cast<int64_t>(s) * plan.maxBlocksPerSeq;
    for (int j = 0; j < (plan.contextLens[s] + B - 1) / B; ++j) {
      uint32_t& stamp = blockStamps_[static_cast<size_t>(table[j])];
      usedBlocks += stamp != blockStamp_ ? 1 : 0;
      stamp = blockStamp_;
    }
    const int n = plan.tokenOffsets[s + 1] - plan.tokenOffsets[s];
    const bool decode = isDecodeRow(n, plan.contextLens[s]);
    decodeOnly = decodeOnly && decode;
    (decode ? stats_->decodeTokens : stats_->prefillTokens) += n;
    layout.maxQueryLen[stage] = std::max(layout.maxQueryLen[stage], n);
    layout.maxContextLen[stage] = std::max(layout.maxContextLen[stage], plan.contextLens[s]);
  }
  StepResult result;
  result.tokenIds.assign(S, -1);
  bool graphed = false;
  // Prompt logprobs run the LM head on prompt rows too: only the eager step has them.
  bool promptLogprobs = false;
  for (int s = 0; plan.extras != nullptr && s < S; ++s) promptLogprobs = promptLogprobs || plan.extras->numPromptLogprobs[s] >= 0;
  if (graphsOn_ && decodeOnly && executor_->graphSafe()) {
    // Graphs possible (policy on, CUDA, graph-safe executor): every decode-only step is
    // one hit (graph launch) or one miss (eager: no bucket fits, prompt logprobs, or a key's warm-up).
    DecodePadPlan pad;
    if (!promptLogprobs && planDecodePadding(options_.graphs.batchBuckets, numStages, seqBegin, plan.maxBlocksPerSeq, &pad)) {
      stepGraphed(plan, pad, result);
      graphed = true;
    } else {
      stats_->graphMisses += 1;
    }
  }
  if (!graphed) stepEager(plan, layout, result);
  backend_->synchronize();
  const uint64_t us = usSince(start);
  stats_->steps += 1;
  stats_->lastStepUs = us;
  stats_->totalStepUs += us;
  stats_->kvBlocksUsed = usedBlocks;
  result.stepTimeMs = static_cast<double>(us) / 1000.0;
  return result;
}

}  // namespace afd
