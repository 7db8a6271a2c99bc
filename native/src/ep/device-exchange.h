// The expert-parallel exchange on the device (static EP, FFN ranks on CUDA): per MoE layer
// and stage, dispatch (each token once to every FFN rank that owns one of its experts:
// its row, expert ids and routing weights), the owner's experts over every row it got,
// and combine (the owner's weighted partial sums back to the source, added in rank
// order). Sections have a fixed capacity per step (the group's largest stage row count),
// counts and routing stay on the device, and sequence numbers live in device memory, so
// an FFN step that runs it is stream work only and replays as a CUDA graph.
//
// Transport "peer" (cuda/ep/ep-ipc-exchange.h): CUDA IPC memory of FFN ranks on one host
// (one GPU or several with P2P); the packing kernel writes straight into the owner's
// region and bumps a device flag. Transport "nccl" (cuda/ep/ep-nccl-exchange.h): an NCCL
// communicator of the group (a GPU per FFN rank, any hosts); each phase is one NCCL group
// of fixed-size sends and receives. The CUDA build registers both (runtime/registry.h);
// CPU-only builds refuse.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/deadline.h"
#include "comm/ep-mesh.h"
#include "core/backend.h"
#include "runtime/connectors.h"

namespace afd {

struct EpDeviceShape {
  int numRanks = 2, rank = 0;
  int64_t hiddenSize = 0;
  int numExperts = 0, topK = 0, numLayers = 0;
  DType act = DType::BF16;
  // Most rows one stage of this rank's block can bring (sizes every section).
  int64_t capMax = 0;
  // A group peer silent this long inside a step fails it (device-side waits).
  int waitDeadlineMs = 2500;
};

// Device counters of the exchange, cumulative since it was built.
struct EpDeviceCounters {
  std::vector<uint64_t> tokensPerExpert;        // [layers * E]
  std::vector<uint64_t> rowsSent, rowsReceived;  // [layers] rows dispatched to / received from other ranks
};

class EpDeviceExchange {
 public:
  virtual ~EpDeviceExchange() = default;
  virtual int64_t capMax() const = 0;
  // Before the step's first layer (eagerly, outside any graph): the group's section rows
  // `cap` and which rows of each stage are tokens (valid[s] of that stage's row count).
  virtual void beginStep(int64_t cap, const std::vector<uint8_t> valid[2]) = 0;
  // One MoE layer and stage of this rank (stream work only): x [T, H], ids / weights [T, K]
  // (this rank's routing), addend [T, H] or null (shared experts), out [T, H]; T may be 0.
  virtual void moeLayer(int layer, int stage, const Tensor& x, const Tensor& ids, const Tensor& weights,
                        const Tensor* addend, const std::vector<ExpertWeights>& experts, Tensor& out) = 0;
  // Runs this rank's experts once over a full step's sections at `cap`, off the wire (all
  // pairs masked), so that a capture that follows neither allocates nor synchronizes.
  virtual void warm(int64_t cap, const std::vector<ExpertWeights>& experts) = 0;
  // Waits for the step's stream work within the deadline; throws EpGroupError naming the
  // group peer that died (closedPeer() >= 0) or timed out on the device.
  virtual void finishStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer) = 0;
  // Ends every device wait of the exchange (a peer is gone); later steps fail.
  virtual void abort() = 0;
  virtual EpDeviceCounters counters() = 0;
};

// Bootstraps over the group's mesh (every rank calls it at the same point after form())
// and builds the exchange on the backend's device and stream.
std::unique_ptr<EpDeviceExchange> buildEpDeviceExchange(EpTransport transport, Backend& backend,
                                                        const EpDeviceShape& shape, comm::EpMesh& mesh, comm::StopFlag stop);

}  // namespace afd
