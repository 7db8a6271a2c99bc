// EpDeviceExchange over CUDA IPC memory (transport "peer"; FFN ranks of one host, on one
// GPU or on several with P2P). Every rank exports one region: for each DBO stage a
// dispatch block and a combine block (cuda/ep/ep-kernels.cuh), then the ready flags
// [phase][stage][source]. The packing kernel writes a token's row straight into the
// owner's dispatch block, the owner returns its partial sums straight into the source's
// combine block, and each phase ends with a flag bump per peer and a device wait on the
// flags of every peer (bounded by the group's wait deadline; abort() ends it at once).
//
// A block is written again only after its reader consumed it, by the exchange's
// lock-step: a source packs layer L + 1 only after the owner's combine of layer L reached
// it, which the owner sends after its experts read layer L's dispatch; an owner returns
// layer L + 1 only after the source's layer L + 1 dispatch, which follows the source's
// combine of layer L. DBO stages use blocks of their own.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/ep/ep-exchange-base.h"

namespace afd::cuda {

class EpIpcExchange final : public EpExchangeBase {
 public:
  EpIpcExchange(CudaBackend& backend, const EpDeviceShape& shape);
  ~EpIpcExchange() override;

  // This rank's half of the bootstrap (host, pid, sizes, IPC handle of the region).
  std::vector<uint8_t> bootstrapBlob() const;
  // Maps every other rank's region from its blob (blobs[rank] is this rank's own).
  void connect(const std::vector<std::vector<uint8_t>>& blobs);

  void finishStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer) override;
  void abort() override;

 private:
  ep::RankPointers dispatchTargets(int stage, bool* sectionByDestination) override;
  void moveDispatch(int layer, int stage) override { signalAndWait(layer, 0, stage); }
  ep::RankPointers returnTargets(int stage) override { return pointers(combineOffset(stage)); }
  void moveCombine(int layer, int stage) override { signalAndWait(layer, 1, stage); }

  size_t flagOffset(int phase, int stage, int source) const {
    return blocksBytes() + 8 * (static_cast<size_t>(phase * 2 + stage) * shape_.numRanks + source);
  }
  unsigned long long* seqAt(int which, int phase, int stage) const {  // which: 0 send, 1 recv
    return seq_.as<unsigned long long>() + static_cast<size_t>((which * 2 + phase) * 2 + stage) * shape_.numRanks;
  }
  // Both phases' exchange: signal every peer's flag, then wait on every peer's.
  void signalAndWait(int layer, int phase, int stage);
  // The message of a device wait's timeout (error word 1 + peer + F * place).
  std::string describeTimeout(int err) const;
  ep::RankPointers pointers(size_t offset) const;
  void checkTransport(unsigned polls) override;  // the device waits' error word

  DeviceBuffer seq_;              // [send | recv][phase][stage][F] flag sequence numbers
  std::vector<char*> bases_;      // every rank's region in this address space
  std::vector<bool> mapped_;      // bases_[r] came from cudaIpcOpenMemHandle
  int* hostError_ = nullptr;      // host-mapped: 0, 1 + s + F * place (a wait on rank s timed out), -1 (aborted)
  int* deviceError_ = nullptr;
};

// The registry's factory for epTransport peer (cuda/cuda-registration.cc): bootstraps over
// the group's mesh and builds the exchange on the CUDA backend's device and stream.
std::unique_ptr<EpDeviceExchange> buildEpIpcExchange(Backend& backend, const EpDeviceShape& shape, comm::EpMesh& mesh,
                                                      comm::StopFlag stop);

}  // namespace afd::cuda
