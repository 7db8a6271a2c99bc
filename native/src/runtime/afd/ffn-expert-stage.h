// Expert parallelism in the FFN role's step (runtime/afd/ffn-loop.h): this FFN rank's
// part of the FFN group's exchange. After every formation of the group it builds the
// device exchange (epTransport peer or nccl); per step it joins the group's barrier, which
// gives the stage count and section rows of the whole group's largest step; per MoE layer
// and stage it runs the block's rows (host rows over the TCP mesh or staged through the
// device exchange; device rows on the exchange directly) or, for a stage only other
// blocks have, joins the exchange with none.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/control-payload.h"
#include "comm/deadline.h"
#include "comm/rendezvous.h"
#include "core/backend.h"
#include "ep/ffn-group.h"
#include "runtime/connectors.h"
#include "runtime/engine/engine.h"

namespace afd {

class FfnExpertStage {
 public:
  // capMax: most rows one stage of this rank's block can bring (device exchange sections);
  // deviceWire: the block's connector moves device memory (else host rows are staged here).
  FfnExpertStage(EpFfnGroup& group, Engine& engine, const comm::RendezvousConfig& config, EpTransport transport,
                 int64_t capMax, bool deviceWire, comm::StopFlag stop);

  // Right after every formation of the group, where every group peer is too: a fresh
  // device exchange (a no-op for tcp). Graphs over the previous exchange must go first.
  void bootstrap();
  // The exchange runs on the device (peer, nccl): the step stays stream work.
  bool onDevice() { return group_.device() != nullptr; }

  // The group's step barrier: the stages every FFN rank runs this step (0 when a group
  // peer shut down: *by names it); sets the step's section rows.
  int beginStep(const comm::ControlPayload& payload, const int64_t stageRows[2], std::string* by);
  // Waits for the device exchange's step within the step deadline (device exchange only).
  void finishStep(int stepDeadlineMs);
  // After the step's wire work: on sampled steps, folds the device exchange's counters into the group's stats.
  void noteStepDone(bool sampled);
  // This step's section rows (the group's largest stage).
  int64_t cap() const { return cap_; }

  // A MoE layer's stage of host rows [rows, H] (logits [rows, E] f32 or null; out [rows, H]).
  // rowOffset: [peers + 1] where each peer's rows start (an idle peer's placeholder row is not routed).
  void runHostRows(int layer, int stage, const comm::ControlPayload& payload, const std::vector<int64_t>& rowOffset,
                   int64_t rows, const void* hidden, const float* logits, void* out);
  // A MoE layer's stage of device rows (device exchange only; stream work).
  void runDeviceRows(int layer, int stage, const Tensor& hidden, const Tensor* logits, Tensor& out);
  // A MoE layer's stage only other blocks of the group have: joins the exchange with no rows.
  void joinEmptyStage(int layer, int stage);

  // Before a capture: the experts ran at this step's section rows already.
  bool warmedForCap() const { return cap_ <= warmCap_; }
  // Runs this rank's experts at this step's sections off the wire (hidden, logits: zeros).
  void warm(const Tensor& hidden, const Tensor* logits);

 private:
  EpFfnGroup& group_;
  Engine& engine_;
  const comm::RendezvousConfig& config_;
  EpTransport transport_;
  int64_t capMax_ = 0;   // most rows of one stage of this rank's block (device exchange sections)
  bool deviceWire_ = false;
  comm::StopFlag stop_;
  int64_t cap_ = 0;      // this step's section rows: the group's largest stage
  int64_t warmCap_ = 0;  // largest section rows the device exchange's experts ran at
  std::vector<uint8_t> realRow_;  // [rows] row r of the stage is a token (not a placeholder)
  // Host rows through the device exchange (connector tcp): staged here, sized at bootstrap.
  Buffer hiddenDev_, logitsDev_, outDev_[comm::kMaxStages];
};

}  // namespace afd
