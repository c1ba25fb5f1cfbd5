#pragma once
// The collective interface. A Group is the set of ranks that take part in a
// collective; with simulated devices every rank is a device worker thread of this
// process, so a Group handle is (shared impl, my rank). Buffers are device memory
// (host memory for CPU devices). Every call is made by all ranks of the group, in
// the same order; a mismatch or a failed peer raises CommError on every rank.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tsr/comm/combine.h"
#include "tsr/dtype.h"

namespace tsr::detail {

/** "sum", "max", "min", "prod". */
const char* reduce_op_name(ReduceOp op);

/** Backend interface: one object shared by every rank of a group. Counts are in
 *  elements. `in` and `out` may alias only where a method says so. */
class GroupImpl {
 public:
  virtual ~GroupImpl() = default;
  /** Number of ranks. */
  virtual int size() const = 0;
  /** Short backend name for messages ("threads", "reference", "mpi", "nccl"). */
  virtual const char* backend() const = 0;
  /** out = reduce over ranks of in (count elements each). in == out allowed. */
  virtual void all_reduce(int rank, const void* in, void* out, int64_t count, DType dt,
                          ReduceOp op) = 0;
  /** out[r*count:(r+1)*count] = in of rank r. */
  virtual void all_gather(int rank, const void* in, void* out, int64_t count, DType dt) = 0;
  /** in holds size()*count elements; out (count) = reduce over ranks of in[rank block]. */
  virtual void reduce_scatter(int rank, const void* in, void* out, int64_t count, DType dt,
                              ReduceOp op) = 0;
  /** in and out hold size()*count; out block s = in block `rank` of rank s. */
  virtual void all_to_all(int rank, const void* in, void* out, int64_t count, DType dt) = 0;
  /** Variable all-to-all in bytes: this rank sends send_counts[p] bytes at
   *  send + send_displs[p] to rank p and receives recv_counts[p] bytes from p at
   *  recv + recv_displs[p]. Every pair's counts must agree. */
  virtual void all_to_allv(int rank, const void* send, const std::vector<int64_t>& send_counts,
                           const std::vector<int64_t>& send_displs, void* recv,
                           const std::vector<int64_t>& recv_counts,
                           const std::vector<int64_t>& recv_displs) = 0;
  /** Each pair (src, dst) sends src's in to dst's out; a rank that is no pair's
   *  destination gets zeros (as lax.ppermute). Every rank passes the same pairs. */
  virtual void permute(int rank, const void* in, void* out, int64_t count, DType dt,
                       const std::vector<std::pair<int, int>>& pairs) = 0;
  /** out = in of `root` on every rank. in == out allowed. */
  virtual void broadcast(int rank, const void* in, void* out, int64_t count, DType dt,
                         int root) = 0;
  /** Returns once every rank has entered. */
  virtual void barrier(int rank) = 0;
  /** Tells the group that `rank` cannot take part in its next collective (its
   *  inputs failed). The peers' pending or next call raises CommError naming the
   *  rank and `reason`; this rank's call returns after raising the same. */
  virtual void fail(int rank, const std::string& op, const std::string& reason) = 0;
};

/** A rank's handle on a group: what device code calls. */
class Group {
 public:
  Group() = default;
  /** Wraps a shared impl for one rank. */
  Group(std::shared_ptr<GroupImpl> impl, int rank) : impl_(std::move(impl)), rank_(rank) {}
  /** This handle's rank in [0, size()). */
  int rank() const { return rank_; }
  /** Number of ranks. */
  int size() const { return impl_->size(); }
  /** See GroupImpl::all_reduce. */
  void all_reduce(const void* in, void* out, int64_t count, DType dt, ReduceOp op) const {
    dt = reduced_wire(dt, count, op, "all_reduce");
    impl_->all_reduce(rank_, in, out, count, dt, op);
  }
  /** See GroupImpl::all_gather. */
  void all_gather(const void* in, void* out, int64_t count, DType dt) const {
    dt = wire(dt, count);
    impl_->all_gather(rank_, in, out, count, dt);
  }
  /** See GroupImpl::reduce_scatter. */
  void reduce_scatter(const void* in, void* out, int64_t count, DType dt, ReduceOp op) const {
    dt = reduced_wire(dt, count, op, "reduce_scatter");
    impl_->reduce_scatter(rank_, in, out, count, dt, op);
  }
  /** See GroupImpl::all_to_all. */
  void all_to_all(const void* in, void* out, int64_t count, DType dt) const {
    dt = wire(dt, count);
    impl_->all_to_all(rank_, in, out, count, dt);
  }
  /** See GroupImpl::all_to_allv. */
  void all_to_allv(const void* send, const std::vector<int64_t>& send_counts,
                   const std::vector<int64_t>& send_displs, void* recv,
                   const std::vector<int64_t>& recv_counts,
                   const std::vector<int64_t>& recv_displs) const {
    impl_->all_to_allv(rank_, send, send_counts, send_displs, recv, recv_counts, recv_displs);
  }
  /** See GroupImpl::permute. */
  void permute(const void* in, void* out, int64_t count, DType dt,
               const std::vector<std::pair<int, int>>& pairs) const {
    dt = wire(dt, count);
    impl_->permute(rank_, in, out, count, dt, pairs);
  }
  /** See GroupImpl::broadcast. */
  void broadcast(const void* in, void* out, int64_t count, DType dt, int root) const {
    dt = wire(dt, count);
    impl_->broadcast(rank_, in, out, count, dt, root);
  }
  /** See GroupImpl::barrier. */
  void barrier() const { impl_->barrier(rank_); }
  /** See GroupImpl::fail. */
  void fail(const std::string& op, const std::string& reason) const {
    impl_->fail(rank_, op, reason);
  }
  /** The shared impl. */
  const std::shared_ptr<GroupImpl>& impl() const { return impl_; }

 private:
  // A complex value travels as its real and imaginary parts: twice the elements of
  // the real type, so every implementation sums it without a complex case.
  static DType wire(DType dt, int64_t& count) {
    if (!is_complex(dt)) return dt;
    count *= 2;
    return real_dtype(dt);
  }
  // Only sums are defined part by part; complex max / min / prod are refused.
  static DType reduced_wire(DType dt, int64_t& count, ReduceOp op, const char* what) {
    if (is_complex(dt) && op != ReduceOp::Sum) complex_op_refused(dt, op, what);
    return wire(dt, count);
  }
  [[noreturn]] static void complex_op_refused(DType dt, ReduceOp op, const char* what);
  std::shared_ptr<GroupImpl> impl_;
  int rank_ = 0;
};

/** The fast shared-memory group for `size` ranks that are threads of this process.
 *  A rank that waits longer than `timeout_ms` for its peers raises CommError naming
 *  the ranks that never arrived (0: TSR_COMM_TIMEOUT_MS, default 120000). */
std::shared_ptr<GroupImpl> make_threads_group(int size, int64_t timeout_ms = 0);
/** The slow, obviously correct group the tests compare the fast ones against. */
std::shared_ptr<GroupImpl> make_reference_group(int size, int64_t timeout_ms = 0);

}  // namespace tsr::detail
