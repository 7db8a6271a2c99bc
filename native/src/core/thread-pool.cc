#include "core/thread-pool.h"

#include <algorithm>

namespace afd {

ThreadPool::ThreadPool(int numThreads) {
  numThreads_ = numThreads > 0 ? numThreads : std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < numThreads_; ++i) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
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
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    runChunks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (numThreads_ == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  // About 4 chunks per thread balances uneven work without much overhead.
  const int64_t chunk = std::max(grain, (n + numThreads_ * 4 - 1) / (numThreads_ * 4));
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk;
    next_.store(0);
    error_ = nullptr;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  runChunks();
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return busy_ == 0; });
    fn_ = nullptr;
  }
  if (error_) std::rethrow_exception(error_);
}

}  // namespace afd
