// The slow, obviously correct group the tests hold the fast ones to: every rank
// copies its input into a staging vector, meets the others, then computes its whole
// output from the staged copies with the plainest loops. Aliasing cannot matter
// because outputs are computed from copies.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "tsr/comm/group.h"
#include "tsr/comm/reduce_kernels.h"
#include "tsr/comm/rendezvous.h"
#include "tsr/error.h"

namespace tsr::detail {
namespace {

using Bytes = std::vector<char>;

class ReferenceGroup final : public GroupImpl {
 public:
  ReferenceGroup(int size, int64_t timeout_ms)
      : rv_(size, timeout_ms, "reference"), staged_(size) {}

  int size() const override { return rv_.size(); }
  const char* backend() const override { return "reference"; }

  void all_reduce(int rank, const void* in, void* out, int64_t count, DType dt,
                  ReduceOp op) override {
    arrive(rank, describe_reduce("all_reduce", in, out, count, dt, op), count * itemsize(dt));
    reduce_from_stage(dt, op, out, count, 0);
    rv_.sync(rank, "all_reduce");
  }

  void all_gather(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const int64_t bytes = count * itemsize(dt);
    arrive(rank, describe_call("all_gather", in, out, count, dt), bytes);
    for (int src = 0; src < size(); ++src) copy(out, src * bytes, staged_[src], 0, bytes);
    rv_.sync(rank, "all_gather");
  }

  void reduce_scatter(int rank, const void* in, void* out, int64_t count, DType dt,
                      ReduceOp op) override {
    arrive(rank, describe_reduce("reduce_scatter", in, out, count, dt, op),
           size() * count * itemsize(dt));
    reduce_from_stage(dt, op, out, count, rank * count);
    rv_.sync(rank, "reduce_scatter");
  }

  void all_to_all(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const int64_t bytes = count * itemsize(dt);
    arrive(rank, describe_call("all_to_all", in, out, count, dt), size() * bytes);
    for (int src = 0; src < size(); ++src)
      copy(out, src * bytes, staged_[src], rank * bytes, bytes);
    rv_.sync(rank, "all_to_all");
  }

  void all_to_allv(int rank, const void* send, const std::vector<int64_t>& send_counts,
                   const std::vector<int64_t>& send_displs, void* recv,
                   const std::vector<int64_t>& recv_counts,
                   const std::vector<int64_t>& recv_displs) override {
    CallDesc call = describe_all_to_allv(size(), send, send_counts, send_displs, recv, recv_counts,
                                         recv_displs);
    int64_t extent = 0;  // the staged prefix of the send buffer covers every piece
    if (call.error.empty()) {
      for (int p = 0; p < size(); ++p) extent = std::max(extent, send_displs[p] + send_counts[p]);
    }
    const auto& calls = arrive(rank, std::move(call), extent);
    for (int src = 0; src < size(); ++src) {
      copy(recv, recv_displs[src], staged_[src], (*calls[src].send_displs)[rank], recv_counts[src]);
    }
    rv_.sync(rank, "all_to_allv");
  }

  void permute(int rank, const void* in, void* out, int64_t count, DType dt,
               const std::vector<std::pair<int, int>>& pairs) override {
    const int64_t bytes = count * itemsize(dt);
    bool sends = false;
    for (const auto& [src, dst] : pairs) sends = sends || src == rank;
    arrive(rank, describe_permute(rank, size(), in, out, count, dt, pairs), sends ? bytes : 0);
    if (bytes > 0) std::memset(out, 0, bytes);
    for (const auto& [src, dst] : pairs) {
      if (dst == rank) copy(out, 0, staged_[src], 0, bytes);
    }
    rv_.sync(rank, "permute");
  }

  void broadcast(int rank, const void* in, void* out, int64_t count, DType dt, int root) override {
    const int64_t bytes = count * itemsize(dt);
    arrive(rank, describe_broadcast(rank, size(), in, out, count, dt, root),
           rank == root ? bytes : 0);
    copy(out, 0, staged_[root], 0, bytes);
    rv_.sync(rank, "broadcast");
  }

  void barrier(int rank) override { rv_.arrive(rank, describe_barrier()); }

  void fail(int rank, const std::string& op, const std::string& reason) override {
    rv_.arrive(rank, describe_failure(op, reason));  // always raises
  }

 private:
  // Stages the first `bytes` of this rank's input, then arrives. Staging comes first
  // so that a failed copy (out of memory) is an ordinary failed rank for the peers.
  const std::vector<CallDesc>& arrive(int rank, CallDesc call, int64_t bytes) {
    if (call.error.empty()) {
      try {
        std::lock_guard lock(stage_mu_);
        const char* p = static_cast<const char*>(call.in);
        staged_[rank].assign(p, p + bytes);
      } catch (const std::exception& e) {
        call.error = std::string("staging its input failed: ") + e.what();
        call.failed = true;
      }
    }
    return rv_.arrive(rank, std::move(call));
  }

  static void copy(void* out, int64_t out_off, const Bytes& from, int64_t from_off, int64_t bytes) {
    if (bytes > 0) std::memcpy(static_cast<char*>(out) + out_off, from.data() + from_off, bytes);
  }

  // out[i] = staged_[0][first + i] op staged_[1][first + i] op ..., in rank order.
  void reduce_from_stage(DType dt, ReduceOp op, void* out, int64_t count, int64_t first) {
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      T* o = static_cast<T*>(out);
      for (int64_t i = 0; i < count; ++i) {
        T acc;
        std::memcpy(&acc, staged_[0].data() + (first + i) * sizeof(T), sizeof(T));
        for (int p = 1; p < size(); ++p) {
          T x;
          std::memcpy(&x, staged_[p].data() + (first + i) * sizeof(T), sizeof(T));
          acc = combine_scalar(op, acc, x);
        }
        o[i] = acc;
      }
    });
  }

  Rendezvous rv_;
  std::mutex stage_mu_;
  std::vector<Bytes> staged_;  // one per rank; read from arrival to the closing sync
};

}  // namespace

std::shared_ptr<GroupImpl> make_reference_group(int size, int64_t timeout_ms) {
  if (size < 1) {
    throw CommError("[make_reference_group] a group needs at least one rank. Got size " +
                    std::to_string(size) + "; expected size >= 1.");
  }
  return std::make_shared<ReferenceGroup>(size, timeout_ms);
}

}  // namespace tsr::detail
