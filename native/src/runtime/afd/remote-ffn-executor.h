// The attention side of the AFD data path: an FfnExecutor whose FFN half runs on a
// remote FFN rank. beginStep publishes this rank's stage token counts on the control
// plane (once per step); submit sends the stage's normed hidden states (and router
// logits when the gate is on attention); collect receives the FFN output. Sends are
// asynchronous, so with two stages the engine's loop overlaps stage 1's attention with
// stage 0's FFN round trip. Stages the block runs but this rank lacks (an empty stage,
// or a second stage only a peer has) cross as one placeholder row. The engine may capture
// submit/collect in a CUDA graph (graphSafe(); runtime/engine/graph-step.cc): beginStep then
// carries the padded counts and the capture / replay flag to the FFN rank.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "comm/control-plane.h"
#include "comm/data-plane.h"
#include "comm/tcp-handshake.h"
#include "core/backend.h"
#include "model/ffn-executor.h"
#include "runtime/engine/stats.h"

namespace afd {

class RemoteFfnExecutor : public FfnExecutor {
 public:
  // Wire time is sampled once every kWireSampleSteps steps (it costs a flush).
  static constexpr uint64_t kWireSampleSteps = 8;

  RemoteFfnExecutor(comm::AttentionControlPlane& control, comm::DataPlane& data, const comm::ModelShape& model,
                    Backend& backend, EngineStats& stats);

  void beginStep(const FfnStepInfo& info) override;
  void submit(int layer, int stage, const Tensor& hidden, const Tensor* routerLogits) override;
  void collect(int layer, int stage, Tensor& ffnOut) override;
  void endStep() override;
  // Graph-safe only on a device wire (NCCL send/recv on the engine's stream) and while
  // this rank is alone in its block (with peers, a step's stage count is the block's,
  // known only after beginStep, and placeholder stages would change the captured work).
  // On graph steps (flags capture / replay) no wire time is sampled (no host sync).
  bool graphSafe() const override { return deviceWire() && merged_.numPeers <= 1; }
  bool samplesWireTime() const override { return true; }
  uint64_t graphEpoch() const override { return planeEpoch_; }

  // Replaces the data plane (a device plane rebuilt after a reconnect). Call between
  // steps (the engine mutex held). A device plane (memoryKind kDevice) gets the
  // engine's device tensors and stream directly; a host plane gets host copies.
  void setDataPlane(comm::DataPlane& data);

  // The block stepped without this rank (it was called in while idle): publish empty
  // counts and send/receive one placeholder row per layer and stage.
  void runEmptyStep();

 private:
  void countReplayedBytes();
  // data_->synchronize(), with the FFN rank's goodbye (when it sent one) in a lost-peer error.
  void syncData();
  void sendRows(int layer, int stage, const void* hidden, const void* logits, int64_t rows);
  void sendPlaceholder(int layer, int stage);
  void recvPlaceholder(int layer, int stage);
  const void* toHost(const Tensor& t, std::vector<uint8_t>& staging);
  // Bytes of one row of activations on the wire ([H] in the activation dtype).
  size_t rowBytes() const { return static_cast<size_t>(model_.hiddenSize) * model_.activationBytes; }
  bool deviceWire() const { return data_->memoryKind() == comm::MemoryKind::kDevice; }
  // Zeroed device rows for placeholders on a device plane (allocated on first use).
  void ensureDevicePlaceholders();
  comm::TransferTag tag(comm::TransferKind kind, int layer, int stage) const {
    return {kind, static_cast<uint32_t>(layer), static_cast<uint32_t>(stage), merged_.step};
  }

  comm::AttentionControlPlane& control_;
  comm::DataPlane* data_;
  comm::ModelShape model_;
  Backend& backend_;
  EngineStats& stats_;
  comm::ControlPayload merged_;
  int localStages_ = 1;
  std::vector<int64_t> localRows_;  // [kMaxStages] tokens of this rank per stage
  bool sampled_ = false;
  uint64_t planeEpoch_ = 0;  // +1 per setDataPlane (graphs captured over the old plane are stale)
  std::vector<uint8_t> zeroHidden_, zeroLogits_, sink_;  // placeholder rows (bytes)
  std::vector<uint8_t> stageHidden_[comm::kMaxStages], stageLogits_[comm::kMaxStages], stageOut_;  // device staging
  Buffer zeroHiddenDev_, zeroLogitsDev_, sinkDev_;  // placeholder rows on a device plane
};

}  // namespace afd
