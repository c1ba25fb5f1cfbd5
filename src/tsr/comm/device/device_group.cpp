// Device-side collectives between accelerator devices of one process. Each rank
// waits for its own stream (its inputs are written), meets its peers on the host to
// learn their buffers, queues its share as device copies and reduce kernels on its
// stream, waits for them, and meets the peers again before returning, so no buffer
// is reused while a peer still reads it. Reductions go in rank order 0..n-1, as in
// the host groups, so sums match them bit for bit.
#include "tsr/comm/device/device_group.h"

#include <algorithm>
#include <string>
#include <utility>

#include "tsr/comm/rendezvous.h"
#include "tsr/error.h"

namespace tsr::detail {
namespace {

// Never throws: a group outliving the driver (process exit) leaks its scratch.
void free_quietly(const DeviceRank& r, void* p) noexcept {
  try {
    r.mem.ops->free(r.gpu, p);
  } catch (...) {
  }
}

const char* at(const void* p, int64_t off) { return static_cast<const char*>(p) + off; }
char* at(void* p, int64_t off) { return static_cast<char*>(p) + off; }

class DeviceGroup final : public GroupImpl {
 public:
  DeviceGroup(std::vector<DeviceRank> ranks, int64_t timeout_ms)
      : ranks_(std::move(ranks)),
        rv_(static_cast<int>(ranks_.size()), timeout_ms, "device"),
        bufs_(ranks_.size()),
        parts_(ranks_.size(), nullptr) {}

  ~DeviceGroup() override {
    for (size_t r = 0; r < bufs_.size(); ++r)
      for (Buf& b : bufs_[r].slot)
        if (b.ptr) free_quietly(ranks_[r], b.ptr);
  }

  int size() const override { return rv_.size(); }
  const char* backend() const override { return "device"; }

  void all_reduce(int rank, const void* in, void* out, int64_t count, DType dt,
                  ReduceOp op) override {
    const auto& calls = meet(rank, describe_reduce("all_reduce", in, out, count, dt, op));
    const int n = size();
    const int64_t isz = itemsize(dt);
    if (n == 1) {
      mem(rank).copy(out, in, static_cast<size_t>(count * isz));
      return;
    }
    // Rank r reduces chunk r of every input into its scratch; after a barrier (every
    // input read, so in == out is safe) each rank gathers the chunks into its output.
    const int64_t lo = chunk_start(rank, count), m = chunk_start(rank + 1, count) - lo;
    void* part = m > 0 ? buffer(rank, 0, m * isz) : nullptr;
    if (m > 0) {
      combine(rank, dt, op, part, peer(rank, 0, at(calls[0].in, lo * isz), m * isz, 1),
              peer(rank, 1, at(calls[1].in, lo * isz), m * isz, 2), m);
      for (int p = 2; p < n; ++p)
        combine(rank, dt, op, part, part, peer(rank, p, at(calls[p].in, lo * isz), m * isz, 1), m);
    }
    parts_published(rank, part);
    finish(rank, "all_reduce");
    for (int p = 0; p < n; ++p) {
      const int64_t plo = chunk_start(p, count), pm = chunk_start(p + 1, count) - plo;
      if (pm > 0) mem(rank).copy(at(out, plo * isz), parts_[static_cast<size_t>(p)], pm * isz);
    }
    finish(rank, "all_reduce");
  }

  void all_gather(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const auto& calls = meet(rank, describe_call("all_gather", in, out, count, dt));
    const int64_t bytes = count * itemsize(dt);
    for (int p = 0; p < size(); ++p) mem(rank).copy(at(out, p * bytes), calls[p].in, bytes);
    finish(rank, "all_gather");
  }

  void reduce_scatter(int rank, const void* in, void* out, int64_t count, DType dt,
                      ReduceOp op) override {
    const auto& calls = meet(rank, describe_reduce("reduce_scatter", in, out, count, dt, op));
    const int n = size();
    const int64_t isz = itemsize(dt), bytes = count * isz, off = rank * bytes;
    if (n == 1) {
      mem(rank).copy(out, in, bytes);
      return;
    }
    if (count > 0) {
      combine(rank, dt, op, out, peer(rank, 0, at(calls[0].in, off), bytes, 1),
              peer(rank, 1, at(calls[1].in, off), bytes, 2), count);
      for (int p = 2; p < n; ++p)
        combine(rank, dt, op, out, out, peer(rank, p, at(calls[p].in, off), bytes, 1), count);
    }
    finish(rank, "reduce_scatter");
  }

  void all_to_all(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const auto& calls = meet(rank, describe_call("all_to_all", in, out, count, dt));
    const int64_t bytes = count * itemsize(dt);
    for (int p = 0; p < size(); ++p)
      mem(rank).copy(at(out, p * bytes), at(calls[p].in, rank * bytes), bytes);
    finish(rank, "all_to_all");
  }

  void all_to_allv(int rank, const void* send, const std::vector<int64_t>& send_counts,
                   const std::vector<int64_t>& send_displs, void* recv,
                   const std::vector<int64_t>& recv_counts,
                   const std::vector<int64_t>& recv_displs) override {
    const auto& calls = meet(rank, describe_all_to_allv(size(), send, send_counts, send_displs,
                                                        recv, recv_counts, recv_displs));
    for (int p = 0; p < size(); ++p) {
      if (recv_counts[p] == 0) continue;
      mem(rank).copy(at(recv, recv_displs[p]), at(calls[p].in, (*calls[p].send_displs)[rank]),
                     recv_counts[p]);
    }
    finish(rank, "all_to_allv");
  }

  void permute(int rank, const void* in, void* out, int64_t count, DType dt,
               const std::vector<std::pair<int, int>>& pairs) override {
    const auto& calls = meet(rank, describe_permute(rank, size(), in, out, count, dt, pairs));
    const int64_t bytes = count * itemsize(dt);
    auto it = std::find_if(pairs.begin(), pairs.end(), [&](auto p) { return p.second == rank; });
    if (it == pairs.end()) {
      mem(rank).fill(out, 0, bytes);
    } else {
      mem(rank).copy(out, calls[it->first].in, bytes);
    }
    finish(rank, "permute");
  }

  void broadcast(int rank, const void* in, void* out, int64_t count, DType dt, int root) override {
    const auto& calls = meet(rank, describe_broadcast(rank, size(), in, out, count, dt, root));
    mem(rank).copy(out, calls[root].in, count * itemsize(dt));
    finish(rank, "broadcast");
  }

  void barrier(int rank) override { meet(rank, describe_barrier()); }

  void fail(int rank, const std::string& op, const std::string& reason) override {
    rv_.arrive(rank, describe_failure(op, reason));  // always raises
  }

 private:
  struct Buf {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  // Per rank: 0 its reduced chunk (read by peers), 1 and 2 staged peer data.
  struct Bufs {
    Buf slot[3];
  };

  const DeviceMemory& mem(int rank) const { return ranks_[static_cast<size_t>(rank)].mem; }

  // Waits for this rank's queued work (its inputs), then for every rank's call.
  const std::vector<CallDesc>& meet(int rank, CallDesc call) {
    mem(rank).sync();
    return rv_.arrive(rank, std::move(call));
  }

  // Waits until this rank's copies and kernels ran, then for every rank to get there.
  void finish(int rank, const char* op) {
    mem(rank).sync();
    if (size() > 1) rv_.sync(rank, op);
  }

  // The first element of chunk c when count elements are cut into size() chunks.
  int64_t chunk_start(int c, int64_t count) const { return count * c / size(); }

  // Scratch `slot` of `rank` with at least `bytes` (grown, never shrunk; the rank's
  // stream is idle here, so the old block is unused).
  void* buffer(int rank, int slot, int64_t bytes) {
    Buf& b = bufs_[static_cast<size_t>(rank)].slot[slot];
    const auto want = static_cast<size_t>(std::max<int64_t>(bytes, 1));
    if (b.bytes >= want) return b.ptr;
    const DeviceRank& r = ranks_[static_cast<size_t>(rank)];
    if (b.ptr) r.mem.ops->free(r.gpu, b.ptr);
    b = {r.mem.ops->alloc(r.gpu, want), want};
    if (!b.ptr) {
      b.bytes = 0;
      throw BackendError(
          "[device group] out of device memory for a collective's scratch. Got a "
          "request for " +
          std::to_string(want) + " bytes on GPU " + std::to_string(r.gpu) +
          "; expected it to fit. Free arrays or call "
          "tsr::clear_caches().");
    }
    return b.ptr;
  }

  // Peer p's bytes where this rank's reduce kernel can read them: in place on the same
  // physical device, else copied into this rank's staging `slot` first.
  const void* peer(int rank, int p, const void* src, int64_t bytes, int slot) {
    if (ranks_[static_cast<size_t>(p)].gpu == ranks_[static_cast<size_t>(rank)].gpu) return src;
    void* stage = buffer(rank, slot, bytes);
    mem(rank).copy(stage, src, static_cast<size_t>(bytes));
    return stage;
  }

  void combine(int rank, DType dt, ReduceOp op, void* dst, const void* a, const void* b,
               int64_t n) {
    const DeviceMemory& m = mem(rank);
    m.ops->reduce(m.stream, dst, a, b, n, dt, static_cast<int>(op));
  }

  // Records where this rank's reduced chunk lives; peers read it after the barrier.
  void parts_published(int rank, void* part) { parts_[static_cast<size_t>(rank)] = part; }

  std::vector<DeviceRank> ranks_;
  Rendezvous rv_;
  std::vector<Bufs> bufs_;
  std::vector<void*> parts_;
};

}  // namespace

std::shared_ptr<GroupImpl> make_device_group(std::vector<DeviceRank> ranks, int64_t timeout_ms) {
  if (ranks.empty()) {
    throw CommError(
        "[make_device_group] a group needs at least one rank. Got 0 ranks; expected "
        "one or more.");
  }
  for (const DeviceRank& r : ranks)
    if (!r.mem.ops || !r.mem.ops->copy2d || !r.mem.ops->reduce)
      throw BackendError(
          "[make_device_group] the accelerator has no device-side copies or "
          "reduce kernel. Got a platform without them; expected both. Use the "
          "host groups (make_threads_group) for it.");
  return std::make_shared<DeviceGroup>(std::move(ranks), timeout_ms);
}

}  // namespace tsr::detail
