// A small fixed thread pool for data-parallel loops (the CPU backend's ops). The caller
// thread takes part in the work, so a pool of N threads starts N - 1 workers.
// A parallelFor issued while another one runs (a nested call, or a second thread using
// the same pool) runs inline on its caller: correct, never a deadlock, just not parallel.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace afd {

class ThreadPool {
 public:
  // numThreads <= 0: std::thread::hardware_concurrency().
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return numThreads_; }

  // Runs fn(begin, end) over [0, n) split into chunks of at least `grain` items.
  // Exceptions thrown by fn are rethrown on the calling thread (the first one wins).
  void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void workerLoop(int index);
  void runChunks();

  int numThreads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex runMu_;  // held by the parallelFor that owns the workers
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};  // bumped (under mu_) once per job
  std::atomic<bool> stop_{false};
  std::atomic<int> busy_{0};              // workers still inside the current job
  // The current job.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_{0};
  std::exception_ptr error_;
  std::mutex errorMu_;
};

}  // namespace afd
