#pragma once
// The MPI transport between processes: tagged point-to-point messages, each wait
// polled against a deadline so a lost, stuck or diverging peer is a CommError within
// TSR_COMM_TIMEOUT, never a hang. One Link per process; every method is thread-safe
// (MPI_THREAD_MULTIPLE). Notices (an abort, a goodbye at shutdown) travel on their own
// tag and are checked by every wait, so a peer that fails is reported at once.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace tsr::detail::mpi {

/** Tags: notices, control exchanges on the calling thread, then two per group. */
constexpr int kNoticeTag = 1;
constexpr int kControlTag = 2;
constexpr int kFirstGroupTag = 16;

using Clock = std::chrono::steady_clock;

/** One run of bytes of a message: a message may gather its bytes from several runs
 *  (a send) or scatter them into several (a receive), so no copy packs or unpacks it. */
struct Span {
  const void* data = nullptr; /**< first byte (written through by a receive) */
  int64_t bytes = 0;          /**< length */
};

class Link {
 public:
  /** The process's link; started by start(). */
  static Link& get();
  /** MPI_Init_thread and the world's rank and size. */
  void start(int64_t timeout_ms);
  /** Goodbye to every process, wait for theirs (the shutdown barrier), MPI_Finalize. */
  void stop();
  /** True between start() and stop(). */
  bool running() const { return running_; }
  /** This process's rank. */
  int rank() const { return rank_; }
  /** Number of processes. */
  int size() const { return size_; }
  /** The deadline of a wait that starts now. */
  Clock::time_point deadline() const {
    return Clock::now() + std::chrono::milliseconds(timeout_ms_);
  }
  /** Largest tag MPI accepts. */
  int tag_ub() const { return tag_ub_; }

  /** Posts a send; `data` must stay alive until wait_sends(). */
  void post_send(const void* data, size_t bytes, int to, int tag, std::vector<void*>& reqs);
  /** Posts a send of the spans' bytes, back to back, as one message read in place
   *  (an MPI datatype over their addresses); they must stay alive until wait(). */
  void post_send_spans(const std::vector<Span>& spans, int to, int tag, std::vector<void*>& reqs);
  /** Posts a receive of one message of exactly the spans' total size into the spans. */
  void post_recv_spans(const std::vector<Span>& spans, int from, int tag, std::vector<void*>& reqs);
  /** Waits for posted sends and receives; peers[i] is reqs[i]'s peer (CommError naming
   *  it on failure or timeout). Polls without sleeping once `streaming`: with every
   *  peer inside the call, the waiting thread is what moves the bytes. */
  void wait(std::vector<void*>& reqs, const std::vector<int>& peers, const char* op,
            Clock::time_point deadline, bool streaming = false);
  /** Receives the next message from `from` with `tag`, whatever its size. */
  std::string recv(int from, int tag, const char* op, Clock::time_point deadline);
  /** The same into `body` (resized to the message; a buffer of that size is reused). */
  void recv_into(int from, int tag, const char* op, Clock::time_point deadline,
                 std::vector<char>& body);
  /** Raises the recorded failure, if any (a lost peer poisons every later call). */
  void check(const char* op);
  /** Best-effort abort notice to every peer; never throws. */
  void abort(const std::string& why) noexcept;

 private:
  // Receives pending notices; raises on an abort; true when `waiting_for` said goodbye.
  bool poll_notices(const char* op, int waiting_for);
  // Raises the CommError for a peer that shut down while this process waited for it.
  [[noreturn]] void departed(const char* op, int peer);
  [[noreturn]] void fail(std::string msg);
  [[noreturn]] void mpi_error(const char* op, const char* call, int code);
  void backoff(int spins) const;
  // Posts a send or receive of the spans as one message.
  void post_spans(const std::vector<Span>& spans, int peer, int tag, bool send,
                  std::vector<void*>& reqs);

  bool running_ = false;
  int rank_ = 0;
  int size_ = 1;
  int tag_ub_ = 32767;
  int64_t timeout_ms_ = 60000;
  std::mutex mu_;
  std::string poisoned_;    // the failure every later call raises
  std::set<int> departed_;  // peers that said goodbye (shutdown)
};

}  // namespace tsr::detail::mpi
