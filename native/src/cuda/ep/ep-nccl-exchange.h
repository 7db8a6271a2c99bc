// EpDeviceExchange over NCCL (transport "nccl"; FFN ranks on GPUs of their own, on one
// host or several). The FFN group joins one NCCL communicator of its own, its unique id
// shipped over the group's mesh. Each phase is one NCCL group of point-to-point sends and
// receives of fixed size (whole sections of `cap` rows, padded: counts and routing stay on
// the device), so the FFN step replays as a CUDA graph:
//  - dispatch: the packing kernel writes section d of a local outbox for every other
//    destination d (and this rank's own section straight into its dispatch block); every
//    peer's section is then received into the dispatch block (counts, ids, weights, rows);
//  - combine: the owner's partial sums for source s are sent from its partial buffer, and
//    received into section `owner` of the source's combine block.
// All writes to a block happen on its own rank's stream, in stream order: one outbox
// serves both DBO stages. A peer that dies or hangs leaves NCCL's kernels waiting: the
// step's bounded wait aborts the communicator (its kernels return) and fails the step.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/ep/ep-exchange-base.h"
#include "cuda/nccl/nccl-comm.h"

namespace afd::cuda {

class EpNcclExchange final : public EpExchangeBase {
 public:
  EpNcclExchange(CudaBackend& backend, const EpDeviceShape& shape);
  ~EpNcclExchange() override;

  // This rank's half of the bootstrap (host, GPU, sizes; rank 0's carries the unique id).
  std::vector<uint8_t> bootstrapBlob() const;
  // Checks every rank's blob and joins the group's communicator (blocks until all joined).
  void connect(const std::vector<std::vector<uint8_t>>& blobs);

  void finishStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer) override;
  void abort() override;

 private:
  ep::RankPointers dispatchTargets(int stage, bool* sectionByDestination) override;
  void moveDispatch(int layer, int stage) override;
  ep::RankPointers returnTargets(int stage) override;
  void moveCombine(int layer, int stage) override;
  void checkTransport(unsigned polls) override;  // NCCL's asynchronous errors

  DeviceBuffer outbox_;  // a dispatch block's layout: section d for destination d
  std::string pciBusId_;
  nccl::ncclUniqueId id_{};  // rank 0's, made in the constructor
  std::unique_ptr<nccl::NcclComm> comm_;
};

// The registry's factory for epTransport nccl (cuda/cuda-registration.cc): bootstraps over
// the group's mesh and builds the exchange on the CUDA backend's device and stream.
std::unique_ptr<EpDeviceExchange> buildEpNcclExchange(Backend& backend, const EpDeviceShape& shape, comm::EpMesh& mesh,
                                                      comm::StopFlag stop);

}  // namespace afd::cuda
