#pragma once
// One in-order stream per device, served by one worker thread. Completion is a
// monotonically increasing ticket so waiting on work needs no per-task event.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "tsr/runtime/task.h"

namespace tsr::detail {

class Stream {
 public:
  /** Starts the worker thread. */
  Stream();
  /** Runs what is queued, then stops the worker. */
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /** Queues a task; returns its ticket. Tasks must not throw (they record errors). */
  uint64_t enqueue(Task task);
  /** Blocks until the task with this ticket has run. */
  void wait(uint64_t ticket);
  /** True if the task with this ticket has run. */
  bool done(uint64_t ticket) const { return completed_.load(std::memory_order_acquire) >= ticket; }
  /** True when every queued task has run (the worker is polling or asleep). */
  bool idle() const {
    return completed_.load(std::memory_order_acquire) == posted_.load(std::memory_order_acquire);
  }
  /** Blocks until everything queued so far has run. */
  void synchronize();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // A ring of queued tasks (grows by doubling; no allocation per task once warm).
  std::vector<Task> ring_;
  size_t head_ = 0;    // index of the oldest queued task
  size_t queued_ = 0;  // tasks in the ring
  uint64_t enqueued_ = 0;
  std::atomic<uint64_t> posted_{0};  // enqueued_, readable without the lock (for spinning)
  bool sleeping_ = false;            // the worker waits on work_cv_
  std::atomic<uint64_t> completed_{0};
  uint64_t wake_at_ = UINT64_MAX;  // smallest ticket a waiter sleeps on (guarded by mu_)
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace tsr::detail
