#include "cuda/ep/ep-kernels.cuh"

#include <stdexcept>
#include <string>

#include "cuda/cuda-check.h"
#include "cuda/dtype-load.cuh"

namespace afd::cuda::ep {
namespace {

constexpr size_t align256(size_t n) { return (n + 255) / 256 * 256; }

__device__ __forceinline__ int ownerOf(int e, int numExperts, int numRanks) {
  return static_cast<int>(static_cast<long long>(e) * numRanks / numExperts);
}

__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One block of 1024 threads: for every destination, an exclusive scan over the tokens
// that go there (deterministic slots, token order).
__global__ void __launch_bounds__(1024) planKernel(PlanArgs a) {
  __shared__ int warpSums[32];
  __shared__ int running[kEpMaxRanks];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid < a.numRanks) running[tid] = 0;
  __syncthreads();
  for (int base = 0; base < a.rows; base += blockDim.x) {
    const int t = base + tid;
    unsigned mask = 0;
    if (t < a.rows && a.valid[t]) {
      for (int k = 0; k < a.topK; ++k) {
        const int e = a.ids[t * a.topK + k];
        mask |= 1u << ownerOf(e, a.numExperts, a.numRanks);
        if (a.tokensPerExpert != nullptr) atomicAdd(a.tokensPerExpert + e, 1ull);
      }
    }
    for (int r = 0; r < a.numRanks; ++r) {
      const bool goes = (mask >> r) & 1u;
      const unsigned ballot = __ballot_sync(0xffffffffu, goes);
      if (lane == 0) warpSums[warp] = __popc(ballot);
      __syncthreads();
      if (warp == 0) {
        int v = lane < static_cast<int>(blockDim.x >> 5) ? warpSums[lane] : 0;
        for (int off = 1; off < 32; off <<= 1) {
          const int n = __shfl_up_sync(0xffffffffu, v, off);
          if (lane >= off) v += n;
        }
        warpSums[lane] = v;  // inclusive
      }
      __syncthreads();
      const int before = (warp > 0 ? warpSums[warp - 1] : 0) + __popc(ballot & ((1u << lane) - 1u));
      if (t < a.rows) {
        if (goes) {
          const int slot = running[r] + before;
          a.slotOf[t * a.numRanks + r] = slot;
          a.tokenAt[r * a.cap + slot] = t;
        } else {
          a.slotOf[t * a.numRanks + r] = -1;
        }
      }
      __syncthreads();
      if (tid == 0) running[r] += warpSums[31];
      __syncthreads();
    }
  }
  if (tid < a.numRanks) a.counts[tid] = running[tid];
  if (tid == 0 && a.rowsSent != nullptr) {
    unsigned long long sent = 0;
    for (int r = 0; r < a.numRanks; ++r) sent += r == a.rank ? 0 : running[r];
    *a.rowsSent += sent;
  }
}

// grid (blocks, F): block y = destination; each block walks slots.
__global__ void packKernel(PackArgs a) {
  const int d = blockIdx.y;
  const int count = a.counts[d];
  char* dst = a.dst.at[d];
  const int section = a.sectionByDestination ? d : a.rank;
  if (blockIdx.x == 0 && threadIdx.x == 0) reinterpret_cast<uint32_t*>(dst)[section] = static_cast<uint32_t>(count);
  const size_t first = static_cast<size_t>(section) * a.cap;
  int32_t* ids = reinterpret_cast<int32_t*>(dst + a.layout.ids) + first * a.topK;
  float* weights = reinterpret_cast<float*>(dst + a.layout.weights) + first * a.topK;
  char* rows = dst + a.layout.rows + first * a.rowBytes;
  const size_t n16 = a.rowBytes / 16;
  for (int i = blockIdx.x; i < a.cap; i += gridDim.x) {
    if (i >= count) {
      if (static_cast<int>(threadIdx.x) < a.topK) {
        ids[static_cast<size_t>(i) * a.topK + threadIdx.x] = -1;
        weights[static_cast<size_t>(i) * a.topK + threadIdx.x] = 0.0f;
      }
      continue;
    }
    const int t = a.tokenAt[d * a.cap + i];
    if (static_cast<int>(threadIdx.x) < a.topK) {
      const int e = a.ids[t * a.topK + threadIdx.x];
      const bool mine = ownerOf(e, a.numExperts, a.numRanks) == d;
      ids[static_cast<size_t>(i) * a.topK + threadIdx.x] = mine ? e : -1;
      weights[static_cast<size_t>(i) * a.topK + threadIdx.x] = mine ? a.weights[t * a.topK + threadIdx.x] : 0.0f;
    }
    const uint4* src = reinterpret_cast<const uint4*>(static_cast<const char*>(a.x) + static_cast<size_t>(t) * a.rowBytes);
    uint4* out = reinterpret_cast<uint4*>(rows + static_cast<size_t>(i) * a.rowBytes);
    for (size_t j = threadIdx.x; j < n16; j += blockDim.x) out[j] = src[j];
  }
  __threadfence_system();
}

__global__ void signalKernel(RankFlags flags, unsigned long long* seq, int numRanks) {
  const int d = threadIdx.x;
  if (d >= numRanks) return;
  const unsigned long long next = seq[d] + 1;
  seq[d] = next;
  __threadfence_system();
  *reinterpret_cast<volatile unsigned long long*>(flags.at[d]) = next;
}

__global__ void waitKernel(const unsigned long long* flags, unsigned long long* expected, int numRanks,
                           unsigned long long timeoutNs, int place, volatile int* error) {
  const int s = threadIdx.x;
  if (s >= numRanks) return;
  const unsigned long long want = expected[s] + 1;
  expected[s] = want;
  const volatile unsigned long long* flag = flags + s;
  const unsigned long long start = globalTimerNs();
  for (unsigned spin = 0; *flag < want; ++spin) {
    if ((spin & 1023u) != 0) continue;
    if (*error != 0) return;
    if (globalTimerNs() - start > timeoutNs) {
      atomicCAS(const_cast<int*>(error), 0, 1 + s + numRanks * place);
      return;
    }
  }
  __threadfence_system();
}

// grid (blocks, F): block y = source.
__global__ void returnKernel(ReturnArgs a) {
  const int s = blockIdx.y;
  const int count = static_cast<int>(a.counts[s]);
  if (blockIdx.x == 0 && threadIdx.x == 0 && a.rowsReceived != nullptr && s != a.rank) atomicAdd(a.rowsReceived, 1ull * count);
  if (a.dst.at[s] == nullptr) return;  // the transport sends this section itself
  const char* src = static_cast<const char*>(a.partial) + static_cast<size_t>(s) * a.cap * a.rowBytes;
  char* dst = a.dst.at[s] + static_cast<size_t>(a.rank) * a.cap * a.rowBytes;
  const size_t n16 = a.rowBytes / 16;
  for (int i = blockIdx.x; i < count; i += gridDim.x) {
    const uint4* from = reinterpret_cast<const uint4*>(src + static_cast<size_t>(i) * a.rowBytes);
    uint4* to = reinterpret_cast<uint4*>(dst + static_cast<size_t>(i) * a.rowBytes);
    for (size_t j = threadIdx.x; j < n16; j += blockDim.x) to[j] = from[j];
  }
  __threadfence_system();
}

__global__ void combineKernel(CombineArgs a) {
  __shared__ int slot[kEpMaxRanks];
  const int t = blockIdx.x;
  const bool valid = a.valid[t] != 0;
  if (static_cast<int>(threadIdx.x) < a.numRanks) slot[threadIdx.x] = valid ? a.slotOf[t * a.numRanks + threadIdx.x] : -1;
  __syncthreads();
  const int dtype = a.bf16 ? kDtypeBf16 : kDtypeF32;
  const size_t row = static_cast<size_t>(t) * a.hidden;
  for (int i = threadIdx.x; i < a.hidden; i += blockDim.x) {
    float sum = 0.0f;
    if (valid) {
      for (int r = 0; r < a.numRanks; ++r) {
        if (slot[r] >= 0) sum += loadAsFloat(a.combine, dtype, (static_cast<size_t>(r) * a.cap + slot[r]) * a.hidden + i);
      }
      if (a.addend != nullptr) sum += loadAsFloat(a.addend, dtype, row + i);
    }
    storeFromFloat(a.out, dtype, row + i, sum);
  }
}

int copyBlocks(int cap) { return cap < 1 ? 1 : (cap < 512 ? cap : 512); }

void checkRanks(int numRanks, const char* what) {
  if (numRanks < 1 || numRanks > kEpMaxRanks) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(numRanks) + " ranks (1.." +
                                std::to_string(kEpMaxRanks) + " supported)");
  }
}

}  // namespace

void epPreload() {
  // Under lazy module loading (CUDA's default) a kernel's first launch synchronizes the
  // context; once a wait kernel spins there, that would wait for a peer that waits for us.
  cudaFuncAttributes attr;
  AFD_CUDA_CHECK(cudaFuncGetAttributes(&attr, planKernel));
  AFD_CUDA_CHECK(cudaFuncGetAttributes(&attr, packKernel));
  AFD_CUDA_CHECK(cudaFuncGetAttributes(&attr, signalKernel));
  AFD_CUDA_CHECK(cudaFuncGetAttributes(&attr, waitKernel));
  AFD_CUDA_CHECK(cudaFuncGetAttributes(&attr, returnKernel));
  AFD_CUDA_CHECK(cudaFuncGetAttributes(&attr, combineKernel));
}

DispatchLayout dispatchLayout(int numRanks, int64_t capMax, int topK, size_t rowBytes) {
  DispatchLayout l;
  const size_t pairs = static_cast<size_t>(numRanks) * capMax * topK;
  l.ids = align256(sizeof(uint32_t) * kEpMaxRanks);
  l.weights = l.ids + align256(pairs * 4);
  l.rows = l.weights + align256(pairs * 4);
  l.bytes = l.rows + align256(static_cast<size_t>(numRanks) * capMax * rowBytes);
  return l;
}

void epPlan(const PlanArgs& a, cudaStream_t stream) {
  checkRanks(a.numRanks, "epPlan");
  if (a.rows > a.cap) throw std::invalid_argument("epPlan: " + std::to_string(a.rows) + " rows exceed the section of " + std::to_string(a.cap));
  planKernel<<<1, 1024, 0, stream>>>(a);
  AFD_CUDA_CHECK_LAUNCH("epPlanKernel");
}

void epPack(const PackArgs& a, cudaStream_t stream) {
  checkRanks(a.numRanks, "epPack");
  if (a.rowBytes % 16 != 0) throw std::invalid_argument("epPack: rows must be a multiple of 16 bytes");
  packKernel<<<dim3(copyBlocks(a.cap), a.numRanks), 256, 0, stream>>>(a);
  AFD_CUDA_CHECK_LAUNCH("epPackKernel");
}

void epSignal(RankFlags flags, unsigned long long* seq, int numRanks, cudaStream_t stream) {
  checkRanks(numRanks, "epSignal");
  signalKernel<<<1, 32, 0, stream>>>(flags, seq, numRanks);
  AFD_CUDA_CHECK_LAUNCH("epSignalKernel");
}

void epWait(const unsigned long long* flags, unsigned long long* expected, int numRanks, unsigned long long timeoutNs,
            int place, volatile int* error, cudaStream_t stream) {
  checkRanks(numRanks, "epWait");
  waitKernel<<<1, 32, 0, stream>>>(flags, expected, numRanks, timeoutNs, place, error);
  AFD_CUDA_CHECK_LAUNCH("epWaitKernel");
}

void epReturn(const ReturnArgs& a, cudaStream_t stream) {
  checkRanks(a.numRanks, "epReturn");
  returnKernel<<<dim3(copyBlocks(a.cap), a.numRanks), 256, 0, stream>>>(a);
  AFD_CUDA_CHECK_LAUNCH("epReturnKernel");
}

void epCombine(const CombineArgs& a, cudaStream_t stream) {
  checkRanks(a.numRanks, "epCombine");
  if (a.rows == 0) return;
  combineKernel<<<a.rows, 256, 0, stream>>>(a);
  AFD_CUDA_CHECK_LAUNCH("epCombineKernel");
}

}  // namespace afd::cuda::ep
