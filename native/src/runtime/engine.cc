#include "runtime/engine.h"

#include <algorithm>
#include <unordered_set>

namespace afd {
namespace {

using Clock = std::chrono::steady_clock;
uint64_t usSince(Clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
}

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

Engine::Engine(ModelLoadSpec spec, const EngineOptions& options) : spec_(std::move(spec)), options_(options) {
  ModelConfig& c = spec_.config;
  if (c.arch == "mixtral") c.normTopkProb = true;  // Mixtral always renormalises the top-k weights
  validateModelConfig(c);
  const ArchDef& arch = findArch(c.arch);
  bool archOk = false;
  for (const auto& a : arch.hfArchitectures) archOk = archOk || a == c.hfArchitecture;
  AFD_CHECK(archOk || c.hfArchitecture.empty(), "architecture " << c.hfArchitecture << " does not belong to family " << c.arch);
  backend_ = createBackend(options.backend);
  store_ = std::make_unique<WeightStore>(spec_, *backend_);
  const bool gateOnAttn = spec_.computeGateOnAttention;
  if (spec_.role != ModelRole::Ffn) attention_ = std::make_unique<AttentionModel>(c, arch, *store_, *backend_, gateOnAttn);
  if (spec_.role != ModelRole::Attention) ffn_ = std::make_unique<FfnModel>(c, arch, *store_, *backend_, gateOnAttn);
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
  if (attention_) {
    const uint64_t perBlock = kvBytesPerBlock(c.numLayers, options.kvBlockSize, c.numKvHeads, c.headDim, options.kvDtype);
    int numBlocks = options.numKvBlocks;
    if (numBlocks <= 0) numBlocks = static_cast<int>(std::clamp<uint64_t>(options.kvCacheBytes / perBlock, 1, 1 << 20));
    kv_ = std::make_unique<PagedKvCache>(*backend_, c.numLayers, numBlocks, options.kvBlockSize, c.numKvHeads, c.headDim,
                                         options.kvDtype);
    info_.kvBlockSize = options.kvBlockSize;
    info_.numKvBlocks = numBlocks;
    info_.kvBytesPerBlock = perBlock;
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
}

void Engine::ffnForward(int layer, const float* hidden, int64_t numTokens, const float* routerLogits, float* out) {
  std::lock_guard<std::mutex> lock(mu_);
  AFD_CHECK(ffn_, "ffnForward needs an engine loaded with role ffn or colocated (this one is " << info_.role << ")");
  const ModelConfig& c = spec_.config;
  const auto t0 = Clock::now();
  const int64_t H = c.hiddenSize;
  Buffer in(backend_.get(), numTokens * H * 4), res(backend_.get(), numTokens * H * 4), lg;
  backend_->copyToDevice(in.data(), hidden, numTokens * H * 4);
  Tensor inT = in.view(DType::F32, {numTokens, H}), outT = res.view(DType::F32, {numTokens, H}), lgT;
  if (routerLogits != nullptr) {
    lg = Buffer(backend_.get(), numTokens * c.numExperts * 4);
    backend_->copyToDevice(lg.data(), routerLogits, numTokens * c.numExperts * 4);
    lgT = lg.view(DType::F32, {numTokens, c.numExperts});
  }
  ffn_->forward(layer, inT, routerLogits ? &lgT : nullptr, outT);
  backend_->copyToHost(out, res.data(), numTokens * H * 4);
  stats_->ffnComputeUs += usSince(t0);
}

void Engine::runLayers(const StepPlan& plan, FfnExecutor& exec, int numStages, const int* seqBegin, const int* tokBegin) {
  const ModelConfig& c = spec_.config;
  const int64_t H = c.hiddenSize, nH = c.numHeads, nKv = c.numKvHeads, D = c.headDim, E = std::max(1, c.numExperts);
  const int64_t T = plan.numTokens;
  Workspace& w = *ws_;
  Tensor hidden = w.hidden.view(DType::F32, {T, H}), normed = w.normed.view(DType::F32, {T, H});
  Tensor proj = w.proj.view(DType::F32, {T, H}), ffnOut = w.ffnOut.view(DType::F32, {T, H});
  Tensor q = w.q.view(DType::F32, {T, nH, D}), attn = w.attn.view(DType::F32, {T, nH, D});
  Tensor k = w.k.view(DType::F32, {T, nKv, D}), v = w.v.view(DType::F32, {T, nKv, D});
  Tensor logits = w.routerLogits.view(DType::F32, {T, E});
  Tensor positions = w.positions.view(DType::I32, {T}), slots = w.slots.view(DType::I32, {T});
  Tensor tokenSeq = w.tokenSeq.view(DType::I32, {T});
  Tensor tables = w.blockTables.view(DType::I32, {plan.numSeqs, plan.maxBlocksPerSeq});

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
    in[s].batch.maxBlocksPerSeq = plan.maxBlocksPerSeq;
    for (int i = seqBegin[s]; i < seqBegin[s + 1]; ++i) {
      in[s].batch.maxQueryLen = std::max(in[s].batch.maxQueryLen, plan.tokenOffsets[i + 1] - plan.tokenOffsets[i]);
      in[s].batch.maxContextLen = std::max(in[s].batch.maxContextLen, plan.contextLens[i]);
    }
    st[s] = AttentionStageTensors{hidden.rows(t0, t1), normed.rows(t0, t1), q.rows(t0, t1), k.rows(t0, t1), v.rows(t0, t1),
                                  attn.rows(t0, t1),   proj.rows(t0, t1),   logits.rows(t0, t1), Tensor{}};
  }
  FfnStepInfo info;
  for (int s = 0; s < numStages; ++s) info.stageTokenCounts.push_back(tokBegin[s + 1] - tokBegin[s]);
  exec.beginStep(info);
  for (int L = 0; L < c.numLayers; ++L) {
    for (int s = 0; s < numStages; ++s) {
      if (L > 0) {
        Tensor out = ffnOut.rows(tokBegin[s], tokBegin[s + 1]);
        exec.collect(L - 1, s, out);
        st[s].ffnOut = out;
      }
      attention_->forwardLayer(L, in[s], st[s], kv_->k(L), kv_->v(L));
      exec.submit(L, s, st[s].normed, attention_->routerOnAttention(L) ? &st[s].routerLogits : nullptr);
    }
  }
  for (int s = 0; s < numStages; ++s) {
    Tensor out = ffnOut.rows(tokBegin[s], tokBegin[s + 1]);
    exec.collect(c.numLayers - 1, s, out);
    attention_->finalNorm(st[s].hidden, out, st[s].normed);
  }
  exec.endStep();
}

StepResult Engine::step(const StepPlan& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto start = Clock::now();
  AFD_CHECK(attention_, "step() needs an engine loaded with role colocated or attention (this one is " << info_.role
                                                                                                      << "; the FFN role serves ffnForward)");
  AFD_CHECK(executor_ != nullptr, "this attention-role engine has no FFN executor yet; attach the connector (or a local FFN engine) first");
  const ModelConfig& c = spec_.config;
  validateStepPlan(plan, c.vocabSize, kv_->blockSize(), kv_->numBlocks());
  const int S = plan.numSeqs, T = plan.numTokens, B = kv_->blockSize();
  ws_->reserve(T, S);
  if (ws_->blockTableCapacity < static_cast<int64_t>(S) * plan.maxBlocksPerSeq) {
    ws_->blockTableCapacity = static_cast<int64_t>(S) * plan.maxBlocksPerSeq * 2;
    ws_->blockTables = Buffer(backend_.get(), ws_->blockTableCapacity * 4);
  }
  const int numStages = plan.stageSplit < S ? 2 : 1;
  const int seqBegin[3] = {0, numStages == 2 ? plan.stageSplit : S, S};
  const int tokBegin[3] = {0, plan.tokenOffsets[seqBegin[1]], T};
  // Host-side per-token metadata: sequence index relative to its stage, cache slot.
  std::vector<int32_t> tokenSeq(T), slots(T), sampleRows, samplePos;
  std::unordered_set<int32_t> usedBlocks;
  for (int s = 0; s < S; ++s) {
    const int stage = s < seqBegin[1] ? 0 : 1;
    const int32_t* table = plan.blockTables + static_cast<int64_t>(s) * plan.maxBlocksPerSeq;
    for (int t = plan.tokenOffsets[s]; t < plan.tokenOffsets[s + 1]; ++t) {
      tokenSeq[t] = s - seqBegin[stage];
      slots[t] = table[plan.positions[t] / B] * B + plan.positions[t] % B;
    }
    for (int j = 0; j < (plan.contextLens[s] + B - 1) / B; ++j) usedBlocks.insert(table[j]);
    if (plan.sampleMask[s]) {
      sampleRows.push_back(plan.tokenOffsets[s + 1] - 1);
      samplePos.push_back(plan.contextLens[s]);
    }
    const int n = plan.tokenOffsets[s + 1] - plan.tokenOffsets[s];
    (n == 1 && plan.contextLens[s] > 1 ? stats_->decodeTokens : stats_->prefillTokens) += n;
  }
  Backend& be = *backend_;
  be.copyToDevice(ws_->ids.data(), plan.tokenIds, T * 4);
  be.copyToDevice(ws_->positions.data(), plan.positions, T * 4);
  be.copyToDevice(ws_->slots.data(), slots.data(), T * 4);
  be.copyToDevice(ws_->tokenSeq.data(), tokenSeq.data(), T * 4);
  be.copyToDevice(ws_->blockTables.data(), plan.blockTables, static_cast<size_t>(S) * plan.maxBlocksPerSeq * 4);

  Tensor hidden = ws_->hidden.view(DType::F32, {T, c.hiddenSize});
  be.embedding(ws_->ids.view(DType::I32, {T}), attention_->embedTable(), hidden);
  TimedExecutor timed(*executor_, *stats_, spec_.role == ModelRole::Colocated);
  runLayers(plan, timed, numStages, seqBegin, tokBegin);

  StepResult result;
  result.tokenIds.assign(S, -1);
  const int64_t numSampled = static_cast<int64_t>(sampleRows.size());
  if (numSampled > 0) {
    be.copyToDevice(ws_->sampleRows.data(), sampleRows.data(), numSampled * 4);
    Tensor last = ws_->lastHidden.view(DType::F32, {numSampled, c.hiddenSize});
    Tensor logits = ws_->logits.view(DType::F32, {numSampled, c.vocabSize});
    be.gatherRows(ws_->normed.view(DType::F32, {T, c.hiddenSize}), ws_->sampleRows.view(DType::I32, {numSampled}), last);
    be.lmHead(last, attention_->lmHeadWeight(), logits);
    std::vector<float> temp, topP;
    std::vector<int32_t> topK;
    std::vector<uint32_t> seeds;
    for (int s = 0; s < S; ++s) {
      if (!plan.sampleMask[s]) continue;
      temp.push_back(plan.temperature[s]);
      topK.push_back(plan.topK[s]);
      topP.push_back(plan.topP[s]);
      seeds.push_back(plan.seeds[s]);
    }
    SamplingBatch params{temp.data(), topK.data(), topP.data(), seeds.data(), samplePos.data()};
    std::vector<int32_t> tokens(numSampled);
    be.sample(logits, params, tokens.data());
    for (int s = 0, j = 0; s < S; ++s)
      if (plan.sampleMask[s]) result.tokenIds[s] = tokens[j++];
    if (plan.returnLogits) {
      result.logits.resize(static_cast<size_t>(numSampled * c.vocabSize));
      be.copyToHost(result.logits.data(), logits.data, result.logits.size() * 4);
    }
    stats_->sampledTokens += numSampled;
  }
  be.synchronize();
  const uint64_t us = usSince(start);
  stats_->steps += 1;
  stats_->lastStepUs = us;
  stats_->totalStepUs += us;
  stats_->kvBlocksUsed = usedBlocks.size();
  result.stepTimeMs = static_cast<double>(us) / 1000.0;
  return result;
}

}  // namespace afd
