#include "tsr/comm/mpi/link.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <sstream>
#include <thread>

#include "tsr/error.h"
#include "tsr/runtime/timeline.h"

namespace tsr::detail::mpi {
namespace {

// A notice's first byte says what it is; the rest is the reason.
constexpr char kAbort = 'A';
constexpr char kGoodbye = 'G';

std::string seconds(int64_t ms) {
  std::ostringstream os;
  os << static_cast<double>(ms) / 1000 << " s";
  return os.str();
}

}  // namespace

Link& Link::get() {
  static auto* link = new Link();  // never destroyed: worker threads may still poll at exit
  return *link;
}

void Link::mpi_error(const char* op, const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  fail(std::string("[") + op + "] " + call + " failed on process " + std::to_string(rank_) + ": " +
       std::string(text, static_cast<size_t>(len)) +
       ". Got an MPI error; expected the transfer to complete. A peer probably died; check "
       "the other processes' output.");
}

void Link::fail(std::string msg) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (poisoned_.empty()) poisoned_ = msg;
  }
  throw CommError(msg);
}

void Link::start(int64_t timeout_ms) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized)
    throw RuntimeError(
        "[distributed.initialize] MPI was finalized by an earlier shutdown() in this process. "
        "Got a second initialize after shutdown; expected one initialize per process (MPI "
        "cannot restart). Initialize once and shut down at the end.");
  if (!inited) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) mpi_error("distributed.initialize", "MPI_Init_thread", rc);
    if (provided < MPI_THREAD_MULTIPLE)
      throw BackendError(
          "[distributed.initialize] this MPI library does not support MPI_THREAD_MULTIPLE. Got "
          "thread level " +
          std::to_string(provided) + "; expected " + std::to_string(MPI_THREAD_MULTIPLE) +
          ". Use an MPI built with thread support (Debian's Open MPI has it).");
  }
  // Errors come back as codes, so a lost peer becomes a CommError, not an abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  void* ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
  if (found) tag_ub_ = *static_cast<int*>(ub);
  timeout_ms_ = timeout_ms;
  poisoned_.clear();
  departed_.clear();
  running_ = true;
}

void Link::backoff(int spins) const {
  // Spin briefly (a small message arrives in microseconds), then sleep in growing
  // steps up to 1 ms so waiting worker threads leave the cores to the ones computing.
  if (spins < 64) {
    std::this_thread::yield();
  } else {
    int us = std::min(1000, 10 << std::min(6, (spins - 64) / 64));
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
}

void Link::check(const char* op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!poisoned_.empty())
    throw CommError(std::string("[") + op +
                    "] cross-process communication is broken by an earlier failure: " + poisoned_);
}

bool Link::poll_notices(const char* op, int waiting_for) {
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, kNoticeTag, MPI_COMM_WORLD, &flag, &msg, &st);
    if (rc != MPI_SUCCESS) mpi_error(op, "MPI_Improbe", rc);
    if (!flag) break;
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    std::string body(static_cast<size_t>(n), '\0');
    MPI_Mrecv(body.data(), n, MPI_CHAR, &msg, MPI_STATUS_IGNORE);
    const int from = st.MPI_SOURCE;
    if (!body.empty() && body[0] == kGoodbye) {
      std::lock_guard<std::mutex> lock(mu_);
      departed_.insert(from);
      continue;
    }
    fail("[" + std::string(op) + "] process " + std::to_string(from) +
         " failed: " + body.substr(1) + ". Got an abort from process " + std::to_string(from) +
         " while process " + std::to_string(rank_) +
         " was communicating; expected every process to take part. Fix the error on process " +
         std::to_string(from) + "; this process cannot continue its cross-process work.");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!poisoned_.empty()) throw CommError(poisoned_);
  return waiting_for >= 0 && departed_.count(waiting_for) > 0;
}

void Link::departed(const char* op, int peer) {
  fail("[" + std::string(op) + "] process " + std::to_string(peer) +
       " has shut down (tsr::distributed::shutdown, or its exit) while process " +
       std::to_string(rank_) + " waited for it. Got a goodbye from process " +
       std::to_string(peer) +
       "; expected it to take part in this operation. Every process must make the same "
       "cross-process calls in the same order; look for a process that returned early.");
}

void Link::post_send(const void* data, size_t bytes, int to, int tag, std::vector<void*>& reqs) {
  auto* req = new MPI_Request;
  int rc = MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, to, tag, MPI_COMM_WORLD, req);
  if (rc != MPI_SUCCESS) {
    delete req;
    mpi_error("send", "MPI_Isend", rc);
  }
  reqs.push_back(req);
}

void Link::post_spans(const std::vector<Span>& spans, int peer, int tag, bool send,
                      std::vector<void*>& reqs) {
  // Adjacent spans merge; a run longer than an int's worth of bytes splits.
  constexpr int64_t kMaxBlock = int64_t{1} << 30;
  std::vector<int> lens;
  std::vector<MPI_Aint> displs;
  for (const Span& s : spans) {
    const auto* p = static_cast<const char*>(s.data);
    for (int64_t off = 0; off < s.bytes;) {
      const int64_t n = std::min(kMaxBlock, s.bytes - off);
      MPI_Aint a = 0;
      MPI_Get_address(p + off, &a);
      if (!lens.empty() && MPI_Aint_add(displs.back(), lens.back()) == a &&
          lens.back() + n <= kMaxBlock) {
        lens.back() += static_cast<int>(n);
      } else {
        lens.push_back(static_cast<int>(n));
        displs.push_back(a);
      }
      off += n;
    }
  }
  auto* req = new MPI_Request;
  void* base = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_BYTE;
  if (lens.size() == 1) {
    base = reinterpret_cast<void*>(displs[0]);  // NOLINT: MPI_Get_address of our pointer
    count = lens[0];
  } else if (lens.size() > 1) {
    MPI_Type_create_hindexed(static_cast<int>(lens.size()), lens.data(), displs.data(), MPI_BYTE,
                             &type);
    MPI_Type_commit(&type);
    base = MPI_BOTTOM;
    count = 1;
  }
  int rc = send ? MPI_Isend(base, count, type, peer, tag, MPI_COMM_WORLD, req)
                : MPI_Irecv(base, count, type, peer, tag, MPI_COMM_WORLD, req);
  if (type != MPI_BYTE) MPI_Type_free(&type);  // freed once the transfer ends
  if (rc != MPI_SUCCESS) {
    delete req;
    mpi_error(send ? "send" : "receive", send ? "MPI_Isend" : "MPI_Irecv", rc);
  }
  reqs.push_back(req);
}

void Link::post_send_spans(const std::vector<Span>& spans, int to, int tag,
                           std::vector<void*>& reqs) {
  post_spans(spans, to, tag, true, reqs);
}

void Link::post_recv_spans(const std::vector<Span>& spans, int from, int tag,
                           std::vector<void*>& reqs) {
  post_spans(spans, from, tag, false, reqs);
}

void Link::wait(std::vector<void*>& reqs, const std::vector<int>& peers, const char* op,
                Clock::time_point deadline, bool streaming) {
  // Waiting for the peers' headers is time lost to them; streaming bodies is transfer.
  std::optional<timeline::WaitClock> clock;
  if (!streaming) clock.emplace();
  auto test = [&](size_t i) {
    auto* req = static_cast<MPI_Request*>(reqs[i]);
    if (!req) return true;
    int done = 0;
    int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) mpi_error(op, "MPI_Test", rc);
    if (done) {
      delete req;
      reqs[i] = nullptr;
    }
    return done != 0;
  };
  auto first_pending = [&]() -> int {
    for (size_t i = 0; i < reqs.size(); ++i)
      if (!test(i)) return static_cast<int>(i);
    return -1;
  };
  for (int spins = 0;; ++spins) {
    const int i = first_pending();
    if (i < 0) break;
    const int peer = peers[static_cast<size_t>(i)];
    if (streaming && spins % 256 != 255) {  // notices are rare: look every 256 polls
      std::this_thread::yield();
      continue;
    }
    bool gone = false;
    try {
      gone = poll_notices(op, peer);
    } catch (const CommError&) {
      // A peer failed, maybe right after this transfer ended on its side: one that
      // completes within a moment succeeded (the failure still poisons later calls).
      auto until = Clock::now() + std::chrono::milliseconds(200);
      int left = i;
      while (left >= 0 && Clock::now() < until) {
        left = first_pending();
        if (left >= 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (left >= 0) throw;
      break;
    }
    if (gone) {
      if (test(static_cast<size_t>(i))) continue;
      departed(op, peer);
    }
    if (Clock::now() > deadline)
      fail("[" + std::string(op) + "] process " + std::to_string(peer) +
           " did not complete a transfer with process " + std::to_string(rank_) + " within " +
           seconds(timeout_ms_) +
           " (TSR_COMM_TIMEOUT). Got no matching send or receive; expected every process to "
           "make the same cross-process calls in the same order. It may have died, hung or run "
           "another program; check its output.");
    if (streaming)
      std::this_thread::yield();
    else
      backoff(spins);
  }
  reqs.clear();
}

std::string Link::recv(int from, int tag, const char* op, Clock::time_point deadline) {
  std::vector<char> body;
  recv_into(from, tag, op, deadline, body);
  return std::string(body.begin(), body.end());
}

void Link::recv_into(int from, int tag, const char* op, Clock::time_point deadline,
                     std::vector<char>& body) {
  bool gone = false;  // set once `from` said goodbye: one last look for its message
  // Set once a peer's abort arrived: `from` may have sent this message just before the
  // abort (the two travel under different tags, so a probe may see the abort first).
  std::exception_ptr failed;
  Clock::time_point grace_end;
  for (int spins = 0;; ++spins) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    int rc = MPI_Improbe(from, tag, MPI_COMM_WORLD, &flag, &msg, &st);
    if (rc != MPI_SUCCESS) mpi_error(op, "MPI_Improbe", rc);
    if (flag) {
      int n = 0;
      MPI_Get_count(&st, MPI_BYTE, &n);
      body.resize(static_cast<size_t>(n));  // a reused buffer of the same size is not touched
      MPI_Request req;
      rc = MPI_Imrecv(body.data(), n, MPI_BYTE, &msg, &req);
      if (rc != MPI_SUCCESS) mpi_error(op, "MPI_Imrecv", rc);
      // A large message streams in: wait for it with the same deadline and notices.
      for (int s2 = 0;; ++s2) {
        int done = 0;
        rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) mpi_error(op, "MPI_Test", rc);
        if (done) return;
        if (poll_notices(op, from) || Clock::now() > deadline) {
          fail("[" + std::string(op) + "] process " + std::to_string(from) +
               " stopped sending to process " + std::to_string(rank_) + " in the middle of a " +
               std::to_string(n) + "-byte message. Got part of it within " + seconds(timeout_ms_) +
               " (TSR_COMM_TIMEOUT); expected all of it. It may have died; "
               "check its output.");
        }
        backoff(s2 < 64 ? s2 : 64);  // stay responsive: a large message completes in ms
      }
    }
    if (failed) {
      if (Clock::now() > grace_end) std::rethrow_exception(failed);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    if (gone) departed(op, from);
    try {
      gone = poll_notices(op, from);
    } catch (const CommError&) {
      failed = std::current_exception();
      grace_end = Clock::now() + std::chrono::milliseconds(200);
      continue;
    }
    if (gone) continue;
    if (Clock::now() > deadline)
      fail("[" + std::string(op) + "] process " + std::to_string(from) +
           " did not answer process " + std::to_string(rank_) + " within " + seconds(timeout_ms_) +
           " (TSR_COMM_TIMEOUT). Got no message from process " + std::to_string(from) +
           "; expected every process to make the same cross-process calls in the same order. "
           "It may have died, hung or run another program; check its output. Later "
           "cross-process operations of this process raise this error too.");
    backoff(spins);
  }
}

void Link::abort(const std::string& why) noexcept {
  if (!running_) return;
  std::string body = kAbort + why;
  std::vector<MPI_Request> reqs;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    MPI_Request r;
    if (MPI_Isend(body.data(), static_cast<int>(body.size()), MPI_CHAR, p, kNoticeTag,
                  MPI_COMM_WORLD, &r) == MPI_SUCCESS)
      reqs.push_back(r);
  }
  // Small messages leave eagerly; give them a moment, never block for long.
  auto until = Clock::now() + std::chrono::milliseconds(500);
  for (auto& r : reqs) {
    int done = 0;
    while (!done && Clock::now() < until) {
      if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
      if (!done) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

void Link::stop() {
  if (!running_) return;
  bool broken = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    broken = !poisoned_.empty();
  }
  if (!broken) {
    // The shutdown barrier: a goodbye to every peer, then every peer's goodbye (or
    // its abort, or the timeout: a peer that never arrives cannot hold us forever).
    std::string body(1, kGoodbye);
    std::vector<void*> reqs;
    std::vector<int> to;
    try {
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        post_send(body.data(), body.size(), p, kNoticeTag, reqs);
        to.push_back(p);
      }
      auto dl = deadline();
      size_t gone = 0;
      for (int spins = 0;; ++spins) {
        poll_notices("distributed.shutdown", -1);
        {
          std::lock_guard<std::mutex> lock(mu_);
          gone = departed_.size();
        }
        if (gone + 1 >= static_cast<size_t>(size_) || Clock::now() > dl) break;
        backoff(spins);
      }
      wait(reqs, to, "distributed.shutdown", deadline());
      // Finalize only with every peer leaving too: one that left without a goodbye
      // (it raised, or exited after a CommError) would hold MPI_Finalize forever.
      if (gone + 1 >= static_cast<size_t>(size_))
        MPI_Finalize();
      else
        broken = true;
    } catch (const CommError&) {
      broken = true;
    }
  }
  // A broken world cannot finalize collectively (MPI_Finalize may wait for the lost
  // peer); the process exits without it, as MPI allows after an error.
  running_ = false;
}

}  // namespace tsr::detail::mpi
