// The cross-process backend's entry points for core (comm/process.h) over MPI.
#include <cstring>

#include "tsr/comm/mpi/link.h"
#include "tsr/comm/process.h"
#include "tsr/error.h"

namespace tsr::detail {

bool mpi_is_available() { return true; }

ProcessWorld process_backend_start(int64_t timeout_ms) {
  mpi::Link& link = mpi::Link::get();
  link.start(timeout_ms);
  return {link.rank(), link.size()};
}

void process_backend_stop() { mpi::Link::get().stop(); }

void process_backend_abort(const std::string& why) noexcept { mpi::Link::get().abort(why); }

std::vector<std::string> process_allgather(const std::vector<int>& processes,
                                           const std::string& bytes, const char* op) {
  mpi::Link& link = mpi::Link::get();
  link.check(op);
  // Each message starts with the caller's name, so two processes in different
  // control calls (one fingerprinting, one gathering) report it instead of mixing.
  std::string msg = std::string(op) + '\0' + bytes;
  std::vector<void*> reqs;
  std::vector<int> to;
  for (int p : processes) {
    if (p == link.rank()) continue;
    link.post_send(msg.data(), msg.size(), p, mpi::kControlTag, reqs);
    to.push_back(p);
  }
  auto dl = link.deadline();
  std::vector<std::string> out;
  out.reserve(processes.size());
  for (int p : processes) {
    if (p == link.rank()) {
      out.push_back(bytes);
      continue;
    }
    std::string got = link.recv(p, mpi::kControlTag, op, dl);
    const size_t cut = got.find('\0');
    const std::string theirs = got.substr(0, cut);
    if (theirs != op)
      throw CommError(std::string("[") + op + "] process " + std::to_string(p) + " is in " +
                      theirs + " while process " + std::to_string(link.rank()) + " is in " + op +
                      ". Got different calls; expected every process to make the same "
                      "cross-process calls in the same order. The processes run different "
                      "programs from here on.");
    out.push_back(cut == std::string::npos ? std::string() : got.substr(cut + 1));
  }
  link.wait(reqs, to, op, dl);
  return out;
}

}  // namespace tsr::detail
