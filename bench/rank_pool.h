#pragma once
// A pool of n persistent rank threads for the comm benchmarks: each run_once() runs
// body(rank) once on every thread and waits for all (futex wake-ups, no spinning).
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace bench {

/** n threads that each run body(rank) once per run_once() call. */
class RankPool {
 public:
  RankPool(int n, std::function<void(int)> body) : n_(n), body_(std::move(body)) {
    for (int r = 0; r < n; ++r) threads_.emplace_back([this, r] { serve(r); });
  }
  ~RankPool() {
    stop_.store(true);
    go_.fetch_add(1);
    go_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void run_once() {
    done_.store(0);
    go_.fetch_add(1);
    go_.notify_all();
    for (int d = done_.load(); d != n_; d = done_.load()) done_.wait(d);
  }

 private:
  void serve(int rank) {
    uint64_t seen = 0;
    for (;;) {
      go_.wait(seen);  // blocks (futex) while go_ == seen
      seen = go_.load();
      if (stop_.load()) return;
      body_(rank);
      if (done_.fetch_add(1) + 1 == n_) done_.notify_one();
    }
  }

  const int n_;
  std::function<void(int)> body_;
  std::atomic<uint64_t> go_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace bench
