#pragma once
// The meeting point of the in-process groups: a generation-counted barrier that
// checks that every rank made the same call and turns a missing rank into a
// CommError after a timeout instead of a hang. Waiting ranks poll for ~20 us, then
// sleep on a condition variable: simulated devices may outnumber cores, so a rank
// that waits must not keep a core from the rank it waits for.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tsr/comm/calls.h"

namespace tsr::detail {

/** The timeout to use: timeout_ms if > 0, else TSR_COMM_TIMEOUT_MS, else 120000. */
int64_t resolve_timeout_ms(int64_t timeout_ms);

/** Arrival, agreement check and phase barriers for one group of `size` ranks. */
class Rendezvous {
 public:
  /** A rendezvous for `size` ranks; `backend` names the group in messages. `ranks`:
   *  the group ranks these are, when they are part of a larger group (else 0..size-1). */
  Rendezvous(int size, int64_t timeout_ms, const char* backend, std::vector<int> ranks = {});

  /** Number of ranks. */
  int size() const { return size_; }
  /** The resolved timeout in milliseconds. */
  int64_t timeout_ms() const { return timeout_ms_; }

  /** Posts this rank's call and waits for every rank. Throws CommError, the same on
   *  every rank, when the calls disagree or a rank failed; throws on timeout or on a
   *  broken group. On return every rank's call (its buffers) may be read until the
   *  collective's closing sync(). */
  const std::vector<CallDesc>& arrive(int rank, CallDesc call);
  /** A barrier between phases of one collective, after arrive(). It does not time
   *  out: every rank is inside the collective and its buffers must outlive the reads. */
  void sync(int rank, std::string_view op);
  /** Hands out 0, 1, 2, ... across ranks; restarts at 0 with each arrive() and sync().
   *  Lets the ranks that are running share a collective's work when they outnumber
   *  cores. */
  int64_t next_task() { return next_task_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // Waits for every rank at this generation, up to the timeout when `timed`; the
  // last one runs on_complete. Called with the lock held; returns with it released.
  template <typename F>
  void wait_all(std::unique_lock<std::mutex>& lock, int rank, std::string_view op, bool timed,
                F&& on_complete);
  // Polls briefly for generation `gen` to end; false if it did not.
  bool poll_until_published(uint64_t gen) const;
  [[noreturn]] void throw_broken(std::string_view op) const;

  const int size_;
  const int64_t timeout_ms_;
  const char* const backend_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;      // completed barriers
  int arrived_ = 0;              // ranks at the current barrier
  std::vector<uint64_t> stamp_;  // per rank: generation + 1 of its latest arrival
  std::vector<CallDesc> calls_;  // the current collective's calls, one per rank
  std::vector<int> ranks_;       // the group ranks of calls_ (empty: 0..size-1)
  std::string verdict_;          // check_calls() of the latest arrival
  bool broken_ = false;          // set by a timeout; every later call raises
  std::string broken_msg_;
  std::atomic<uint64_t> published_{0};  // generation_, readable without the lock
  std::atomic<int64_t> next_task_{0};
};

}  // namespace tsr::detail
