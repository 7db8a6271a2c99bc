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
#include <string>
#include <vector>

#include "cuda/cuda-backend.h"
#include "cuda/device-buffer.h"
#include "cuda/ep/ep-kernels.cuh"
#include "runtime/ep-device-exchange.h"

namespace afd::cuda {

class EpPeerExchange final : public EpDeviceExchange {
 public:
  EpPeerExchange(CudaBackend& backend, const EpDeviceShape& shape);
  ~EpPeerExchange() override;

  // This rank's half of the bootstrap (host, pid, sizes, IPC handle of the region).
  std::vector<uint8_t> bootstrapBlob() const;
  // Maps every other rank's region from its blob (blobs[rank] is this rank's own).
  void connect(const std::vector<std::vector<uint8_t>>& blobs);

  const char* transport() const override { return "peer"; }
  int64_t capMax() const override { return shape_.capMax; }
  void beginStep(int64_t cap, const std::vector<uint8_t> valid[2]) override;
  void moeLayer(int layer, int stage, const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor* addend,
                const std::vector<ExpertWeights>& experts, Tensor& out) override;
  void warm(int64_t cap, const std::vector<ExpertWeights>& experts) override;
  void finishStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer) override;
  void abort() override;
  EpDeviceCounters counters() override;

 private:
  size_t dispatchOffset(int stage) const { return static_cast<size_t>(stage) * (layout_.bytes + combineBytes_); }
  size_t combineOffset(int stage) const { return dispatchOffset(stage) + layout_.bytes; }
  size_t flagOffset(int phase, int stage, int source) const {
    return flagsOffset_ + 8 * (static_cast<size_t>(phase * 2 + stage) * shape_.numRanks + source);
  }
  unsigned long long* seqAt(int which, int phase, int stage) const {  // which: 0 send, 1 recv
    return seq_ + static_cast<size_t>((which * 2 + phase) * 2 + stage) * shape_.numRanks;
  }
  // Both phases' exchange: signal every peer's flag, then wait on every peer's.
  void signalAndWait(int layer, int phase, int stage);
  // The message of a device wait's timeout (error word 1 + peer + F * place).
  std::string describeTimeout(int err) const;
  ep::RankPointers pointers(size_t offset) const;
  // This rank's experts over N slots (rows [N, H], ids / weights [N, K]; -1 ids masked) into partial_.
  void runOwnExperts(const void* rows, const int32_t* ids, const float* weights, int64_t N,
                     const std::vector<ExpertWeights>& experts);
  [[noreturn]] void fail(comm::CommErrorKind kind, const std::string& why);

  CudaBackend& backend_;
  cudaStream_t stream_;
  EpDeviceShape shape_;
  size_t rowBytes_;
  ep::DispatchLayout layout_;
  size_t combineBytes_, flagsOffset_;
  DeviceBuffer region_;  // exported: [stage]{dispatch, combine} then flags
  DeviceBuffer local_;   // this rank's own buffers, carved below
  int32_t* slotOf_ = nullptr;
  int32_t* tokenAt_ = nullptr;
  int32_t* counts_ = nullptr;
  uint8_t* valid_ = nullptr;  // [2][capMax]
  void* partial_ = nullptr;   // [F * capMax, H]
  int32_t* warmIds_ = nullptr;
  float* warmWeights_ = nullptr;
  unsigned long long* seq_ = nullptr;       // [send | recv][phase][stage][F]
  unsigned long long* tokens_ = nullptr;    // [layers * E]
  unsigned long long* rowsSent_ = nullptr;  // [layers]
  unsigned long long* rowsRecv_ = nullptr;  // [layers]
  std::vector<char*> bases_;      // every rank's region in this address space
  std::vector<bool> mapped_;      // bases_[r] came from cudaIpcOpenMemHandle
  int* hostError_ = nullptr;      // host-mapped: 0, s + 1 (a wait on rank s timed out), -1 (aborted)
  int* deviceError_ = nullptr;
  uint8_t* validHost_ = nullptr;  // pinned staging of valid_
  cudaEvent_t done_ = nullptr;
  int64_t cap_ = 0;
};

}  // namespace afd::cuda
