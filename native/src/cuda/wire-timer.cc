#include "cuda/wire-timer.h"

#include "cuda/cuda-check.h"

namespace afd::cuda {

WireTimer::WireTimer(int numPeers) {
  const size_t n = static_cast<size_t>(numPeers) * 2;
  start_.resize(n, nullptr);
  end_.resize(n, nullptr);
  recorded_.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    AFD_CUDA_CHECK(cudaEventCreate(&start_[i]));
    AFD_CUDA_CHECK(cudaEventCreate(&end_[i]));
  }
}

WireTimer::~WireTimer() {
  for (auto e : start_)
    if (e) cudaEventDestroy(e);
  for (auto e : end_)
    if (e) cudaEventDestroy(e);
}

void WireTimer::start(int peer, bool send, cudaStream_t stream) {
  AFD_CUDA_CHECK(cudaEventRecord(start_[index(peer, send)], stream));
}

void WireTimer::end(int peer, bool send, cudaStream_t stream) {
  AFD_CUDA_CHECK(cudaEventRecord(end_[index(peer, send)], stream));
  recorded_[index(peer, send)] = true;
}

uint64_t WireTimer::lastUs(int peer, bool send) const {
  const size_t i = index(peer, send);
  if (peer < 0 || i >= recorded_.size() || !recorded_[i]) return 0;
  float ms = 0;
  if (cudaEventElapsedTime(&ms, start_[i], end_[i]) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return static_cast<uint64_t>(ms * 1000.0f);
}

afd::comm::WireTime WireTimer::span(int peer, bool send) const {
  const size_t i = index(peer, send);
  if (peer < 0 || i >= recorded_.size() || !recorded_[i]) return {};
  afd::comm::WireTime t;
  t.us = lastUs(peer, send);
  t.basis = afd::comm::WireBasis::kOpSpan;
  return t;
}

}  // namespace afd::cuda
