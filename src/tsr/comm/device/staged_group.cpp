// A host group whose accelerator ranks take part through host copies of their
// buffers: what a reshard between a CPU device and accelerator devices (an
// uncommitted input moving onto a GPU mesh) runs on.
#include <algorithm>
#include <utility>
#include <vector>

#include "tsr/comm/device/device_group.h"

namespace tsr::detail {
namespace {

// One rank's host copies for one call: `in` holds the device input's bytes, `out`
// is written back to the device output when the call returns.
class Staging {
 public:
  Staging(const DeviceMemory& mem, const void* in, size_t in_bytes, void* out, size_t out_bytes)
      : mem_(mem), out_(out) {
    if (mem.host()) return;
    if (in) {
      hin_.resize(std::max<size_t>(in_bytes, 1));
      mem.read(hin_.data(), in, in_bytes);
    }
    if (out) hout_.resize(std::max<size_t>(out_bytes, 1));
  }
  const void* in(const void* p) const { return mem_.host() || !p ? p : hin_.data(); }
  void* out(void* p) { return mem_.host() || !p ? p : hout_.data(); }
  // Writes [off, off + n) of the host output back.
  void write_back(size_t off, size_t n) const {
    if (!mem_.host() && out_ && n > 0)
      mem_.write(static_cast<char*>(out_) + off, hout_.data() + off, n);
  }

 private:
  const DeviceMemory& mem_;
  void* out_;
  std::vector<unsigned char> hin_, hout_;
};

class StagedGroup final : public GroupImpl {
 public:
  StagedGroup(std::shared_ptr<GroupImpl> inner, std::vector<DeviceMemory> mems)
      : inner_(std::move(inner)), mems_(std::move(mems)) {}

  int size() const override { return inner_->size(); }
  const char* backend() const override { return inner_->backend(); }

  void all_reduce(int rank, const void* in, void* out, int64_t count, DType dt,
                  ReduceOp op) override {
    const size_t b = bytes(count, dt);
    Staging s(mem(rank), in, b, out, b);
    inner_->all_reduce(rank, s.in(in), s.out(out), count, dt, op);
    s.write_back(0, b);
  }
  void all_gather(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const size_t b = bytes(count, dt);
    Staging s(mem(rank), in, b, out, b * n());
    inner_->all_gather(rank, s.in(in), s.out(out), count, dt);
    s.write_back(0, b * n());
  }
  void reduce_scatter(int rank, const void* in, void* out, int64_t count, DType dt,
                      ReduceOp op) override {
    const size_t b = bytes(count, dt);
    Staging s(mem(rank), in, b * n(), out, b);
    inner_->reduce_scatter(rank, s.in(in), s.out(out), count, dt, op);
    s.write_back(0, b);
  }
  void all_to_all(int rank, const void* in, void* out, int64_t count, DType dt) override {
    const size_t b = bytes(count, dt) * n();
    Staging s(mem(rank), in, b, out, b);
    inner_->all_to_all(rank, s.in(in), s.out(out), count, dt);
    s.write_back(0, b);
  }
  void all_to_allv(int rank, const void* send, const std::vector<int64_t>& send_counts,
                   const std::vector<int64_t>& send_displs, void* recv,
                   const std::vector<int64_t>& recv_counts,
                   const std::vector<int64_t>& recv_displs) override {
    // Only the received ranges go back: the rest of recv holds this rank's own data.
    Staging s(mem(rank), send, extent(send_counts, send_displs), recv,
              extent(recv_counts, recv_displs));
    inner_->all_to_allv(rank, s.in(send), send_counts, send_displs, s.out(recv), recv_counts,
                        recv_displs);
    for (size_t p = 0; p < recv_counts.size(); ++p)
      s.write_back(static_cast<size_t>(recv_displs[p]), static_cast<size_t>(recv_counts[p]));
  }
  void permute(int rank, const void* in, void* out, int64_t count, DType dt,
               const std::vector<std::pair<int, int>>& pairs) override {
    const size_t b = bytes(count, dt);
    Staging s(mem(rank), in, b, out, b);
    inner_->permute(rank, s.in(in), s.out(out), count, dt, pairs);
    s.write_back(0, b);
  }
  void broadcast(int rank, const void* in, void* out, int64_t count, DType dt, int root) override {
    const size_t b = bytes(count, dt);
    Staging s(mem(rank), in, b, out, b);
    inner_->broadcast(rank, s.in(in), s.out(out), count, dt, root);
    s.write_back(0, b);
  }
  void barrier(int rank) override { inner_->barrier(rank); }
  void fail(int rank, const std::string& op, const std::string& reason) override {
    inner_->fail(rank, op, reason);
  }

 private:
  const DeviceMemory& mem(int rank) const { return mems_[static_cast<size_t>(rank)]; }
  size_t n() const { return static_cast<size_t>(size()); }
  static size_t bytes(int64_t count, DType dt) {
    return static_cast<size_t>(count) * static_cast<size_t>(itemsize(dt));
  }
  static size_t extent(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
    int64_t end = 0;
    for (size_t p = 0; p < counts.size() && p < displs.size(); ++p)
      if (counts[p] > 0) end = std::max(end, displs[p] + counts[p]);
    return static_cast<size_t>(end);
  }

  std::shared_ptr<GroupImpl> inner_;
  std::vector<DeviceMemory> mems_;
};

}  // namespace

std::shared_ptr<GroupImpl> make_staged_group(std::shared_ptr<GroupImpl> inner,
                                             std::vector<DeviceMemory> mems) {
  return std::make_shared<StagedGroup>(std::move(inner), std::move(mems));
}

}  // namespace tsr::detail
