#include "tsr/comm/rendezvous.h"

#include <chrono>
#include <sstream>
#include <thread>
#include <utility>

#include "tsr/error.h"
#include "tsr/runtime/env.h"
#include "tsr/runtime/timeline.h"

namespace tsr::detail {
namespace {

// How long a rank polls (yielding its core) before it sleeps. Waking a sleeping
// thread costs 20-40 us on a VM; polling this long cut a barrier of 8 ranks on 2
// cores from ~40 us to ~17 us and of 2 ranks from ~35 us to ~5 us.
constexpr int kPollUs = 20;

}  // namespace

int64_t resolve_timeout_ms(int64_t timeout_ms) {
  constexpr int64_t kDefaultTimeoutMs = 120000;
  if (timeout_ms > 0) return timeout_ms;
  // At most a year: the deadline (now + timeout) must stay inside steady_clock.
  auto v = env_int({"TSR_COMM_TIMEOUT_MS", 1, int64_t{365} * 24 * 3600 * 1000, "comm",
                    "milliseconds a collective waits for its peers before a CommError", "120000"});
  return v ? *v : kDefaultTimeoutMs;
}

Rendezvous::Rendezvous(int size, int64_t timeout_ms, const char* backend, std::vector<int> ranks)
    : size_(size),
      timeout_ms_(resolve_timeout_ms(timeout_ms)),
      backend_(backend),
      stamp_(size, 0),
      calls_(size),
      ranks_(std::move(ranks)) {}

template <typename F>
void Rendezvous::wait_all(std::unique_lock<std::mutex>& lock, int rank, std::string_view op,
                          bool timed, F&& on_complete) {
  timeline::WaitClock clock;  // the collective's time waiting for its peers
  if (broken_) throw_broken(op);
  const uint64_t gen = generation_;
  stamp_[rank] = gen + 1;
  if (++arrived_ == size_) {
    on_complete();
    arrived_ = 0;
    published_.store(++generation_, std::memory_order_release);
    lock.unlock();  // so the woken ranks do not queue on a mutex we still hold
    cv_.notify_all();
    return;
  }
  lock.unlock();
  if (poll_until_published(gen)) return;
  lock.lock();
  auto ended = [&] { return generation_ != gen || broken_; };
  bool done = true;
  if (timed) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
    done = cv_.wait_until(lock, deadline, ended);
  } else {
    cv_.wait(lock, ended);
  }
  if (generation_ != gen) {
    lock.unlock();
    return;
  }
  if (!done) {  // the first rank to time out breaks the group for everyone
    std::vector<int> missing, present;
    for (int r = 0; r < size_; ++r)
      (stamp_[r] == gen + 1 ? present : missing).push_back(ranks_.empty() ? r : ranks_[r]);
    std::ostringstream os;
    os << '[' << op << "] timed out after " << timeout_ms_ << " ms waiting for "
       << rank_list(missing) << " of a " << backend_ << " group of " << size_
       << (ranks_.empty() ? "" : " ranks on this process") << " (" << rank_list(present)
       << " arrived). Got no call from " << rank_list(missing)
       << "; expected every rank to call the same collectives in the same order. The group "
       << "is now broken and every later collective on it raises; look for a rank that "
       << "skipped this call (it raised or returned early) and create a new group.";
    broken_ = true;
    broken_msg_ = os.str();
    cv_.notify_all();
  }
  throw CommError(broken_msg_);
}

bool Rendezvous::poll_until_published(uint64_t gen) const {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kPollUs);
  for (;;) {
    for (int i = 0; i < 4; ++i) {
      if (published_.load(std::memory_order_acquire) != gen) return true;
      std::this_thread::yield();  // lets a rank that has not arrived yet run
    }
    if (std::chrono::steady_clock::now() > until) return false;
  }
}

void Rendezvous::throw_broken(std::string_view op) const {
  std::ostringstream os;
  os << '[' << op << "] the " << backend_ << " group is broken by an earlier timeout, so no "
     << "collective can run on it. The timeout was: " << broken_msg_;
  throw CommError(os.str());
}

const std::vector<CallDesc>& Rendezvous::arrive(int rank, CallDesc call) {
  std::unique_lock lock(mu_);
  if (broken_) throw_broken(call.op);
  calls_[rank] = std::move(call);
  wait_all(lock, rank, calls_[rank].op, /*timed=*/true, [&] {
    verdict_ = check_calls(calls_, ranks_);
    next_task_.store(0, std::memory_order_relaxed);
  });
  // verdict_ and calls_ change only once every rank, this one included, arrives
  // again, so reading them unlocked is safe.
  if (!verdict_.empty()) throw CommError(verdict_);
  return calls_;
}

void Rendezvous::sync(int rank, std::string_view op) {
  std::unique_lock lock(mu_);
  // No timeout here: every rank has arrived, so each will come, and a rank that
  // left early could free buffers that its peers still read.
  wait_all(lock, rank, op, /*timed=*/false,
           [&] { next_task_.store(0, std::memory_order_relaxed); });
}

}  // namespace tsr::detail
