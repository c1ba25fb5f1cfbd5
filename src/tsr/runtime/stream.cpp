#include "tsr/runtime/stream.h"

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

uint64_t Stream::enqueue(std::function<void()> task) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    ticket = ++enqueued_;
  }
  work_cv_.notify_one();
  return ticket;
}

void Stream::wait(uint64_t ticket) {
  if (done(ticket)) return;
  std::unique_lock<std::mutex> lock(mu_);
  ++waiters_;
  done_cv_.wait(lock, [&] { return done(ticket); });
  --waiters_;
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
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
    task = nullptr;  // drop captured buffers before signalling completion
    bool notify;
    {
      std::lock_guard<std::mutex> lock(mu_);
      completed_.fetch_add(1, std::memory_order_release);
      notify = waiters_ > 0;
    }
    if (notify) done_cv_.notify_all();
  }
}

}  // namespace tsr::detail
