// A small fork-join pool for CPU kernels. DESIGN §8: threads inside a kernel only
// when fewer devices are busy than there are cores (one device on a 2-core machine
// leaves a core idle during every elementwise op and transpose). Workers spin
// (yielding) for a short while after a job, because a jitted program's kernels come
// back to back, then sleep; a caller that finds the pool taken runs its work alone.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "tsr/backends/cpu/cpu_kernels.h"

namespace tsr::detail::cpu {
namespace {

int hardware_threads() {
  static const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return n;
}

class Pool {
 public:
  explicit Pool(int workers) : workers_(workers) {
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { loop(); });
  }

  // Runs fn(ctx, i) for i in [0, parts): here and on the workers, or all here when
  // another caller holds the pool. Returns once every worker is done with the job,
  // so none touches fn/ctx afterwards.
  void run(int parts, void (*fn)(void*, int), void* ctx) {
    std::unique_lock<std::mutex> own(submit_, std::try_to_lock);
    if (!own.owns_lock() || workers_ == 0) {
      for (int i = 0; i < parts; ++i) fn(ctx, i);
      return;
    }
    fn_ = fn;
    ctx_ = ctx;
    parts_ = parts;
    next_.store(0, std::memory_order_relaxed);
    acked_.store(0, std::memory_order_relaxed);
    {
      // Publishes the fields above to workers that see the new epoch.
      std::lock_guard<std::mutex> l(mu_);
      epoch_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    take_parts();
    while (acked_.load(std::memory_order_acquire) < workers_) std::this_thread::yield();
  }

 private:
  void take_parts() {
    for (int i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < parts_;) fn_(ctx_, i);
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      // Spin ~100 us for the next job (kernels of a program come back to back), then sleep.
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
      while (epoch_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      if (epoch_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return epoch_.load(std::memory_order_acquire) != seen; });
      }
      seen = epoch_.load(std::memory_order_acquire);
      take_parts();
      acked_.fetch_add(1, std::memory_order_release);
    }
  }

  int workers_;
  std::vector<std::thread> threads_;
  std::mutex submit_;  // one job at a time
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int> next_{0}, acked_{0};
  void (*fn_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
  int parts_ = 0;
};

Pool& pool() {
  // Never destroyed: workers may still be parked when the process exits.
  static Pool* p = new Pool(hardware_threads() - 1);
  return *p;
}

}  // namespace

int kernel_threads(int busy_devices) {
  return std::max(1, hardware_threads() / std::max(1, busy_devices));
}

void parallel_parts(int parts, void (*fn)(void*, int), void* ctx) {
  if (parts <= 1) {
    if (parts == 1) fn(ctx, 0);
    return;
  }
  pool().run(parts, fn, ctx);
}

}  // namespace tsr::detail::cpu
