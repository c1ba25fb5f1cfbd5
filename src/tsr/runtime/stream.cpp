#include "tsr/runtime/stream.h"

#include <algorithm>

namespace tsr::detail {

Stream::Stream() : worker_([this] { run(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_one();
  worker_.join();
}

uint64_t Stream::enqueue(Task task) {
  uint64_t ticket;
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_ == ring_.size()) {
      std::vector<Task> grown(std::max<size_t>(16, ring_.size() * 2));
      for (size_t i = 0; i < queued_; ++i) grown[i] = std::move(ring_[(head_ + i) % ring_.size()]);
      ring_ = std::move(grown);
      head_ = 0;
    }
    ring_[(head_ + queued_) % ring_.size()] = std::move(task);
    ++queued_;
    ticket = ++enqueued_;
    posted_.store(ticket, std::memory_order_release);
    wake = sleeping_;
  }
  if (wake) work_cv_.notify_one();  // a spinning worker sees posted_ without a syscall
  return ticket;
}

void Stream::wait(uint64_t ticket) {
  if (done(ticket)) return;
  std::unique_lock<std::mutex> lock(mu_);
  // The worker wakes waiters only when the smallest awaited ticket completes, not
  // after every task.
  while (!done(ticket)) {
    if (ticket < wake_at_) wake_at_ = ticket;
    done_cv_.wait(lock);
  }
}

void Stream::synchronize() {
  uint64_t last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = enqueued_;
  }
  wait(last);
}

void Stream::run() {
  for (;;) {
    Task task;
    // Eager programs issue ops back to back: poll briefly before sleeping so the
    // next op does not pay a futex wake-up (two context switches).
    uint64_t done = completed_.load(std::memory_order_relaxed);
    for (int spin = 0; spin < 2000 && posted_.load(std::memory_order_acquire) == done; ++spin) {
      if (spin % 16 == 15) std::this_thread::yield();
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      sleeping_ = true;
      work_cv_.wait(lock, [&] { return stop_ || queued_ > 0; });
      sleeping_ = false;
      if (queued_ == 0) return;  // stop_ and drained
      task = std::move(ring_[head_]);
      head_ = (head_ + 1) % ring_.size();
      --queued_;
    }
    task();
    task.reset();  // drop captured buffers before signalling completion
    bool notify;
    {
      std::lock_guard<std::mutex> lock(mu_);
      uint64_t now = completed_.fetch_add(1, std::memory_order_release) + 1;
      notify = now >= wake_at_;
      if (notify) wake_at_ = UINT64_MAX;  // each waiter re-registers what it still needs
    }
    if (notify) done_cv_.notify_all();
  }
}

}  // namespace tsr::detail
