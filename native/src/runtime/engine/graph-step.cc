// Engine::step for decode-only steps under the CUDA graph policy (graph-policy.h).
// The padded step (embedding -> every layer with its FFN executor -> final norm ->
// gather of the sampled rows -> LM head) runs:
//   1st time for a key: eagerly (a miss; lazy cuBLAS / NCCL setup and buffer growth
//                       happen here, outside any capture),
//   2nd time:           captured into a graph (executor flag kFlagGraphCapture), then
//                       launched (a hit and a capture),
//   later:              replayed (flag kFlagGraphReplay; a hit).
// Inputs (ids, positions, slots, stage-relative sequence, sampled rows, block tables:
// StepInputs) live in one device buffer the graph reads, refreshed by one upload before each launch;
// sampling stays eager after the graph, on the real sampled rows only. With an executor
// that times the wire (remote, device plane), one eligible step in kGraphWireSampleSteps
// runs eagerly with wire timing (a miss), so the per-layer transfer stats stay measured.
// Graphs are dropped when the backend's allocation epoch, the executor or its epoch
// changes (anything the graph points at may have moved).
#include <algorithm>

#include "comm/control-payload.h"
#include "runtime/engine/engine.h"

namespace afd {

void Engine::dropStaleGraphs() {
  const uint64_t backendEpoch = backend_->allocationEpoch(), executorEpoch = executor_->graphEpoch();
  if (graphExecutor_ != executor_ || executorEpoch != graphExecutorEpoch_) {
    graphs_.clear();
    warmed_.clear();  // a new data plane may set itself up lazily on first use: warm up again
  } else if (backendEpoch != graphBackendEpoch_) {
    graphs_.clear();  // buffers only grow, so keys warmed before still fit without growth
  }
  graphExecutor_ = executor_;
  graphExecutorEpoch_ = executorEpoch;
  graphBackendEpoch_ = backendEpoch;
}

void Engine::runDecodeBody(const StepLayout& layout, int64_t paddedTokens) {
  const ModelConfig& c = spec_.config;
  Backend& be = *backend_;
  const int64_t Tp = paddedTokens;
  Tensor hidden = ws_->hidden.view(DType::F32, {Tp, c.hiddenSize});
  be.embedding(Tensor(layout.ids, DType::I32, {Tp}, be.device()), attention_->embedTable(), hidden);
  runLayers(layout, *executor_);
  // Every padded row is gathered (the sampled ones first) so the shapes are fixed.
  Tensor last = ws_->lastHidden.view(ws_->act, {Tp, c.hiddenSize});
  Tensor logits = ws_->logits.view(DType::F32, {Tp, c.vocabSize});
  be.gatherRows(ws_->normed.view(ws_->act, {Tp, c.hiddenSize}), Tensor(layout.sampleRows, DType::I32, {Tp}, be.device()),
                last);
  be.lmHead(last, attention_->lmHeadWeight(), logits);
}

void Engine::stepGraphed(const StepPlan& plan, const DecodePadPlan& pad, StepResult& result) {
  const ModelConfig& c = spec_.config;
  Backend& be = *backend_;
  const int S = plan.numSeqs, B = kv_->blockSize(), Tp = pad.paddedTokens(), MB = pad.key.blocksPerSeq;
  AFD_CHECK(padBlock_ >= 0 && MB >= plan.maxBlocksPerSeq, "graph step: no pad block or block-table bucket " << MB << " < "
                                                                                                            << plan.maxBlocksPerSeq);
  ws_->reserve(Tp, Tp);
  // Padded host inputs: pad rows read token 0 at position 0 (context 1) from the pad block.
  StepInputs& in = stepInputs_;
  in.reset(Tp, Tp, MB);
  std::fill(in.slots(), in.slots() + Tp, padBlock_ * B);
  std::fill(in.tables(), in.tables() + static_cast<size_t>(Tp) * MB, padBlock_);
  for (int s = 0; s < pad.key.numStages; ++s)
    for (int r = pad.paddedBegin[s]; r < pad.paddedBegin[s + 1]; ++r) in.tokenSeq()[r] = r - pad.paddedBegin[s];
  // gdn layers: one token per row; pad rows start from zero in the pad slot (they all
  // compute the same values there), real rows continue their sequence's slot.
  if (state_) {
    std::fill(in.stateSlots(), in.stateSlots() + Tp, state_->padSlot());
    for (int s = 0; s < pad.key.numStages; ++s)
      for (int r = pad.paddedBegin[s]; r <= pad.paddedBegin[s + 1]; ++r) in.seqStarts()[r + s] = r - pad.paddedBegin[s];
  }
  std::vector<int32_t> samplePos;
  int numSampled = 0;
  for (int i = 0; i < S; ++i) {
    const int r = pad.paddedRow(i), t = plan.tokenOffsets[i], pos = plan.positions[t];
    const int32_t* table = plan.blockTables + static_cast<int64_t>(i) * plan.maxBlocksPerSeq;
    in.ids()[r] = plan.tokenIds[t];
    in.positions()[r] = pos;
    in.slots()[r] = table[pos / B] * B + pos % B;
    std::copy(table, table + plan.maxBlocksPerSeq, in.tables() + static_cast<int64_t>(r) * MB);
    if (state_) {
      in.stateSlots()[r] = plan.stateSlots[i];
      in.hasState()[r] = 1;  // a decode row (context > 1) continues its slot
    }
    if (plan.sampleMask[i]) {
      in.sampleRows()[numSampled++] = r;
      samplePos.push_back(plan.contextLens[i]);
    }
  }
  // The graphs read graphInputs_: a growth moves it (a new allocation epoch), so it
  // happens before the stale graphs are dropped.
  const StepInputs::Device dev = in.upload(be, graphInputs_);
  dropStaleGraphs();

  StepLayout layout;
  layout.numStages = pad.key.numStages;
  layout.maxBlocksPerSeq = MB;
  layout.setInputs(dev);
  for (int s = 0; s <= pad.key.numStages; ++s) layout.seqBegin[s] = layout.tokBegin[s] = pad.paddedBegin[s];
  for (int s = 0; s < pad.key.numStages; ++s) {
    layout.maxQueryLen[s] = 1;
    layout.maxContextLen[s] = MB * B;  // the capacity: the attention's split count is fixed per key
  }
  FfnStepInfo info;
  for (int s = 0; s < pad.key.numStages; ++s) info.stageTokenCounts.push_back(pad.key.stageTokens[s]);

  auto found = graphs_.find(pad.key);
  // Replays cannot time the wire: one graph-eligible step in kGraphWireSampleSteps runs
  // eagerly with wire timing so the per-layer transfer stats stay live (a miss).
  const bool sampleWire = executor_->samplesWireTime() && ++graphEligibleSteps_ % kGraphWireSampleSteps == 0;
  if (found != graphs_.end() && !sampleWire) {
    info.flags = comm::kFlagGraphReplay;
    executor_->beginStep(info);
    found->second->replay();
    executor_->endStep();
    stats_->graphHits += 1;
  } else if (warmed_.count(pad.key) != 0 && !sampleWire) {
    info.flags = comm::kFlagGraphCapture;
    executor_->beginStep(info);
    std::unique_ptr<CapturedGraph> graph = captureGraph(be, "CUDA graph of the decode step",
                                                        "set cudaGraph.policy \"off\" to run eagerly",
                                                        [&] { runDecodeBody(layout, Tp); });
    graph->replay();
    executor_->endStep();
    stats_->graphNodes = graph->nodeCount();
    graphs_[pad.key] = std::move(graph);
    stats_->graphCaptures += 1;
    stats_->graphHits += 1;
  } else {
    info.sampleWire = sampleWire;
    executor_->beginStep(info);
    runDecodeBody(layout, Tp);
    executor_->endStep();
    warmed_.insert(pad.key);
    stats_->graphMisses += 1;
  }
  sampleInto(plan, ws_->logits.view(DType::F32, {numSampled, c.vocabSize}), samplePos, result);
}

}  // namespace afd
