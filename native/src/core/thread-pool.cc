#include "core/thread-pool.h"

#include <immintrin.h>

#include <algorithm>

namespace afd {
namespace {

// Spin this many pause loops (~10-20 us) before sleeping: ops of a decode step come
// back to back, so a worker usually finds the next job while still spinning.
constexpr int kSpinIterations = 256;

inline void cpuRelax() { _mm_pause(); }

}  // namespace

ThreadPool::ThreadPool(int numThreads) {
  numThreads_ = numThreads > 0 ? numThreads : std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < numThreads_; ++i) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::runChunks() {
  for (;;) {
    const int64_t begin = next_.fetch_add(chunk_);
    if (begin >= n_) return;
    const int64_t end = std::min(n_, begin + chunk_);
    try {
      (*fn_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(errorMu_);
      if (!error_) error_ = std::current_exception();
      next_.store(n_);
      return;
    }
  }
}

void ThreadPool::workerLoop(int /*index*/) {
  uint64_t seen = 0;
  for (;;) {
    for (int i = 0; i < kSpinIterations && generation_.load(std::memory_order_acquire) == seen && !stop_.load(); ++i) cpuRelax();
    if (generation_.load(std::memory_order_acquire) == seen && !stop_.load()) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    runChunks();
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_.notify_one();
    }
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  std::unique_lock<std::mutex> owner(runMu_, std::try_to_lock);
  if (numThreads_ == 1 || n <= grain || !owner.owns_lock()) {
    fn(0, n);
    return;
  }
  // About 4 chunks per thread balances uneven work without much overhead.
  const int64_t chunk = std::max(grain, (n + numThreads_ * 4 - 1) / (numThreads_ * 4));
  fn_ = &fn;
  n_ = n;
  chunk_ = chunk;
  next_.store(0);
  error_ = nullptr;
  busy_.store(static_cast<int>(workers_.size()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  runChunks();
  for (int i = 0; i < kSpinIterations && busy_.load(std::memory_order_acquire) != 0; ++i) cpuRelax();
  if (busy_.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return busy_.load() == 0; });
  }
  fn_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace afd
