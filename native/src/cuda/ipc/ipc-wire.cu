#include "cuda/ipc/ipc-wire.h"

#include <algorithm>

#include "comm/comm-error.h"
#include "core/error.h"
#include "cuda/cuda-check.h"
#include "cuda/nccl/nccl-comm.h"

namespace afd::cuda {
namespace {

struct Counters {
  unsigned long long sendSeq;
  unsigned long long recvExpected;
  unsigned int blockDone;
  unsigned int pad;
};

__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// src, dst: [bytes]; dst and remoteFlag are in the peer's memory.
__global__ void peerSendKernel(const uint4* src, uint4* dst, size_t n16, const unsigned char* srcTail,
                               unsigned char* dstTail, int tailBytes, Counters* c,
                               volatile unsigned long long* remoteFlag) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n16;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < tailBytes) dstTail[threadIdx.x] = srcTail[threadIdx.x];
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x != 0) return;
  const unsigned int prev = atomicAdd(&c->blockDone, 1u);
  if (prev != gridDim.x - 1) return;
  c->blockDone = 0;
  const unsigned long long seq = c->sendSeq + 1;
  c->sendSeq = seq;
  __threadfence_system();
  *remoteFlag = seq;
}

__global__ void peerWaitKernel(volatile unsigned long long* flag, Counters* c, unsigned long long timeoutNs,
                               volatile int* error) {
  if (threadIdx.x != 0) return;
  const unsigned long long expected = c->recvExpected + 1;
  c->recvExpected = expected;
  if (*error) return;
  const unsigned long long start = globalTimerNs();
  for (unsigned int spin = 0; *flag < expected; ++spin) {
    if ((spin & 1023u) != 0) continue;
    if (*error) return;  // abort() from the host (the peer is gone): stop spinning now
    if (globalTimerNs() - start > timeoutNs) {
      *error = 1;
      return;
    }
  }
  __threadfence();
}

}  // namespace

IpcWire::IpcWire(size_t stageInboxBytes, size_t controlInboxBytes, int stepDeadlineMs, std::string peer)
    : stageBytes_((stageInboxBytes + 255) / 256 * 256),
      controlBytes_((controlInboxBytes + 255) / 256 * 256),
      flagsOffset_(stageBytes_ * kWireStages * kWireSlots + controlBytes_ * kWireSlots),
      stepDeadlineMs_(stepDeadlineMs),
      peer_(std::move(peer)),
      region_("peer-memory wire inboxes", flagsOffset_ + 8 * kWireChannels * kWireSlots),
      counters_("peer-memory wire counters", sizeof(Counters) * kWireChannels * kWireSlots) {
  AFD_CUDA_CHECK(cudaMemset(region_.data(), 0, region_.bytes()));
  AFD_CUDA_CHECK(cudaMemset(counters_.data(), 0, counters_.bytes()));
  AFD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&hostError_), sizeof(int), cudaHostAllocMapped));
  *hostError_ = 0;
  AFD_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceError_), hostError_, 0));
}

IpcWire::~IpcWire() {
  // The wire's users have finished (or failed) their steps; no device-wide sync here, so
  // a stream stuck on another wire cannot hang the teardown.
  if (remote_ && remoteMapped_) cudaIpcCloseMemHandle(remote_);
  if (hostError_) cudaFreeHost(hostError_);
}

size_t IpcWire::inboxOffset(int channel, int slot) const {
  if (channel == kControlChannel) return stageBytes_ * kWireStages * kWireSlots + controlBytes_ * slot;
  return stageBytes_ * (channel * kWireSlots + slot);
}

cudaIpcMemHandle_t IpcWire::exportHandle() const {
  cudaIpcMemHandle_t h;
  AFD_CUDA_CHECK(cudaIpcGetMemHandle(&h, region_.data()));
  return h;
}

void IpcWire::connect(const cudaIpcMemHandle_t& remote) {
  void* p = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&p, remote, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw afd::Error(std::string("peer-memory wire: cannot map the memory of ") + peer_ + " (cudaIpcOpenMemHandle: " +
                     cudaGetErrorString(e) + "); both ranks must be on one host with P2P between the GPUs; use the "
                     "NCCL data plane otherwise");
  }
  remote_ = static_cast<char*>(p);
  remoteMapped_ = true;
}

void IpcWire::connectLocal(IpcWire& other) {
  AFD_CHECK(other.stageBytes_ == stageBytes_ && other.controlBytes_ == controlBytes_,
            "peer-memory wire: connectLocal needs both wires of the same sizes");
  remote_ = other.region_.as<char>();
  remoteMapped_ = false;
}

void IpcWire::send(int channel, int slot, const void* src, size_t bytes, cudaStream_t stream) {
  AFD_CHECK(remote_ != nullptr, "peer-memory wire: send before connect()");
  AFD_CHECK(bytes <= inboxBytes(channel), "peer-memory wire: " << bytes << " bytes exceed the inbox of " << inboxBytes(channel));
  const size_t n16 = (reinterpret_cast<uintptr_t>(src) % 16 == 0) ? bytes / 16 : 0;
  const int tail = static_cast<int>(bytes - n16 * 16);
  AFD_CHECK(tail <= 256, "peer-memory wire: source must be 16-byte aligned (got a tail of " << tail << " bytes)");
  const int threads = 256;
  const int blocks = static_cast<int>(std::clamp<size_t>((n16 + threads * 4 - 1) / (threads * 4), 1, 64));
  char* dst = remote_ + inboxOffset(channel, slot);
  Counters* c = counters_.as<Counters>() + channel * kWireSlots + slot;
  auto* flag = reinterpret_cast<unsigned long long*>(remote_ + flagOffset(channel, slot));
  peerSendKernel<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(src), reinterpret_cast<uint4*>(dst), n16,
                                                 static_cast<const unsigned char*>(src) + n16 * 16,
                                                 reinterpret_cast<unsigned char*>(dst) + n16 * 16, tail, c, flag);
  AFD_CUDA_CHECK_LAUNCH("peerSendKernel");
}

void IpcWire::recv(int channel, int slot, size_t bytes, cudaStream_t stream) {
  AFD_CHECK(bytes <= inboxBytes(channel), "peer-memory wire: " << bytes << " bytes exceed the inbox of " << inboxBytes(channel));
  Counters* c = counters_.as<Counters>() + channel * kWireSlots + slot;
  auto* flag = reinterpret_cast<unsigned long long*>(region_.as<char>() + flagOffset(channel, slot));
  // An idle FFN rank legitimately waits long for the next control payload (its host
  // side polls a stop flag meanwhile); data waits are bounded by the step deadline.
  const int64_t ms = channel == kControlChannel ? int64_t{600000} : stepDeadlineMs_;
  const unsigned long long timeoutNs = static_cast<unsigned long long>(ms) * 1000000ull;
  peerWaitKernel<<<1, 32, 0, stream>>>(flag, c, timeoutNs, deviceError_);
  AFD_CUDA_CHECK_LAUNCH("peerWaitKernel");
}

void IpcWire::abort() {
  aborted_ = true;
  // Host-mapped: device waits still spinning on this wire see it and return.
  if (hostError_) *hostError_ = 1;
}

void IpcWire::wait(cudaEvent_t event, const afd::comm::Deadline& deadline, afd::comm::StopFlag stop) {
  if (aborted_ || *hostError_) {
    throw afd::comm::CommError(afd::comm::CommErrorKind::kPeerClosed,
                               "the peer-memory data plane to " + peer_ + " failed earlier; restart the peer");
  }
  try {
    nccl::waitEventBounded(event, deadline, peer_, nullptr, 0, hostError_, stop, peerLost_);
  } catch (...) {
    abort();
    throw;
  }
}

}  // namespace afd::cuda
