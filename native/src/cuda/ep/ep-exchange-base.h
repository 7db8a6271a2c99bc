// What the device exchanges of the FFN group (transports peer and nccl) share: the blocks
// a rank receives into (per DBO stage a dispatch block and a combine block, laid out as in
// cuda/ep/ep-kernels.cuh), the plan / pack / experts / return / combine pipeline of one MoE
// layer, the warm-up and the device counters. A transport says where the packing and
// return kernels write, and moves each phase's sections to their ranks (moveDispatch,
// moveCombine) on the engine's stream.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/cuda-backend.h"
#include "cuda/cuda-check.h"
#include "cuda/device-buffer.h"
#include "cuda/ep/ep-kernels.cuh"
#include "ep/device-exchange.h"

namespace afd::cuda {

// The start of every rank's bootstrap blob (fixed layout; every rank runs the same build):
// a transport's Blob struct begins with it and adds what it needs.
struct EpBlobHeader {
  char magic[8];
  int32_t rank = 0, numRanks = 0, device = 0, pid = 0;
  int64_t capMax = 0;
  uint64_t regionBytes = 0;
  char host[64];
};

class EpExchangeBase : public EpDeviceExchange {
 public:
  int64_t capMax() const override { return shape_.capMax; }
  void beginStep(int64_t cap, const std::vector<uint8_t> valid[2]) override;
  void moeLayer(int layer, int stage, const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor* addend,
                const std::vector<ExpertWeights>& experts, Tensor& out) override;
  void warm(int64_t cap, const std::vector<ExpertWeights>& experts) override;
  EpDeviceCounters counters() override;

 protected:
  // Checks the shape and allocates the blocks (followed by extraRegionBytes for the
  // transport: peer's flags) and this rank's own buffers. what: "peer", "NCCL".
  EpExchangeBase(CudaBackend& backend, const EpDeviceShape& shape, const std::string& what, size_t extraRegionBytes);
  ~EpExchangeBase() override;

  // Where the packing kernel writes a stage's sections (dst.at[d] for destination d) and
  // whether it writes section d there (true) or section `rank` (false: the owner's block).
  virtual ep::RankPointers dispatchTargets(int stage, bool* sectionByDestination) = 0;
  // After the packing kernel: every source's section must reach the local dispatch block.
  virtual void moveDispatch(int layer, int stage) = 0;
  // Where the return kernel writes section `rank` for source s (null: nowhere, the
  // transport sends partialSection(s) itself).
  virtual ep::RankPointers returnTargets(int stage) = 0;
  // After the return kernel: every owner's partial sums must reach the local combine block.
  virtual void moveCombine(int layer, int stage) = 0;

  size_t dispatchOffset(int stage) const { return static_cast<size_t>(stage) * (layout_.bytes + combineBytes_); }
  size_t combineOffset(int stage) const { return dispatchOffset(stage) + layout_.bytes; }
  // Offset past both stages' blocks (the transport's extra region bytes start here).
  size_t blocksBytes() const { return 2 * (layout_.bytes + combineBytes_); }
  char* dispatchBlock(int stage) const { return region_.as<char>() + dispatchOffset(stage); }
  char* combineBlock(int stage) const { return region_.as<char>() + combineOffset(stage); }
  // finishStep's bounded wait: records done_ and polls it. Each poll first asks the
  // transport (checkTransport: throws on its own failure, e.g. a device wait that timed
  // out), then every 16th the group's links (closedPeer); the stop flag and the deadline
  // (failing with deadlineWhy) end it too. Every failure goes through fail().
  void waitStep(const comm::Deadline& deadline, comm::StopFlag stop, const std::function<int()>& closedPeer,
                const std::string& deadlineWhy);
  virtual void checkTransport(unsigned polls) = 0;
  // abort(), then throws EpGroupError(kind, why + failNote_).
  [[noreturn]] void fail(comm::CommErrorKind kind, const std::string& why);
  // This rank's header under `magic` (the transport's, 8 bytes).
  EpBlobHeader blobHeader(const char* magic) const;
  // A transport's Blob as the bytes its bootstrapBlob() sends (readBlob reads them back).
  template <typename Blob>
  static std::vector<uint8_t> blobBytes(const Blob& b) {
    std::vector<uint8_t> out(sizeof b);
    std::memcpy(out.data(), &b, sizeof b);
    return out;
  }
  // connect()'s first check: one blob per rank of the group. what: "peer", "NCCL".
  void checkBlobCount(const std::vector<std::vector<uint8_t>>& blobs, const char* what) const;
  // Copies rank r's blob into out (a Blob of `bytes` bytes that starts with an EpBlobHeader)
  // after checking its size and magic, then its rank, rank count and block sizes against
  // this rank's; throws EpGroupError naming the rank. what: "a peer", "an NCCL".
  void readBlob(const std::vector<uint8_t>& blob, int r, const char* magic, void* out, size_t bytes, const char* what) const;
  // This rank's partial sums for source s's section (cap_ rows).
  const char* partialSection(int s) const { return static_cast<const char*>(partial_) + static_cast<size_t>(s) * cap_ * rowBytes_; }

  CudaBackend& backend_;
  cudaStream_t stream_;
  EpDeviceShape shape_;
  size_t rowBytes_;
  ep::DispatchLayout layout_;
  size_t combineBytes_;
  DeviceBuffer region_;  // [stage]{dispatch, combine}, then the transport's extra bytes
  cudaEvent_t done_ = nullptr;
  int64_t cap_ = 0;
  const char* failNote_ = "";  // appended to every failure (what the abort did)

 private:
  // This rank's experts over N slots (rows [N, H], ids / weights [N, K]; -1 ids masked) into partial_.
  void runOwnExperts(const void* rows, const int32_t* ids, const float* weights, int64_t N,
                     const std::vector<ExpertWeights>& experts);

  DeviceBuffer local_;  // this rank's own buffers, carved below
  int32_t* slotOf_ = nullptr;
  int32_t* tokenAt_ = nullptr;
  int32_t* counts_ = nullptr;
  uint8_t* valid_ = nullptr;  // [2][capMax]
  void* partial_ = nullptr;   // [F * capMax, H]
  int32_t* warmIds_ = nullptr;
  float* warmWeights_ = nullptr;
  unsigned long long* tokens_ = nullptr;    // [layers * E]
  unsigned long long* rowsSent_ = nullptr;  // [layers]
  unsigned long long* rowsRecv_ = nullptr;  // [layers]
  uint8_t* validHost_ = nullptr;  // pinned staging of valid_
};

// Builds exchange X (EpIpcExchange, EpNcclExchange) on the backend's device and joins it
// to the group: every rank's bootstrapBlob() over the mesh, then X::connect.
template <typename X>
std::unique_ptr<EpDeviceExchange> buildOverMesh(const char* transport, Backend& backend, const EpDeviceShape& shape,
                                                comm::EpMesh& mesh, comm::StopFlag stop) {
  auto* cudaBackend = dynamic_cast<CudaBackend*>(&backend);
  AFD_CHECK(cudaBackend != nullptr, "epTransport " << transport << " needs the CUDA backend (this FFN engine runs on " << backend.name() << ")");
  AFD_CUDA_CHECK(cudaSetDevice(backend.device().index));  // the calling thread targets the engine's device
  auto ex = std::make_unique<X>(*cudaBackend, shape);
  ex->connect(mesh.allGather(ex->bootstrapBlob(), 4096, stop));
  return ex;
}

}  // namespace afd::cuda
