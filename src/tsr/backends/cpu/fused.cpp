// The fused elementwise kernel: every member's own kernel, block by block, with the
// intermediates in per-thread scratch that stays in cache (runtime/fusion.cpp).
#include <algorithm>
#include <vector>

#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/backends/fused.h"
#include "tsr/core/small_vec.h"

namespace tsr::detail::cpu {
namespace {

using Ref = FusedElementwise::Ref;

// Members must not split their block between threads again.
constexpr int kNoSplit = 1 << 20;

void run_blocks(const FusedElementwise& f, const KernelArgs& a, int64_t begin, int64_t end) {
  thread_local std::vector<char> scratch;
  SmallVec<size_t, 8> offset;
  size_t total = 0;
  for (size_t b : f.tmp_bytes) {
    offset.push_back(total);
    total += (b + 63) / 64 * 64;
  }
  if (scratch.size() < total + 64) scratch.resize(total + 64);
  char* base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 *
                                       64);  // 64-byte aligned blocks
  auto at = [&](const Ref& r, int64_t s) -> char* {
    size_t off = r.scalar ? 0 : static_cast<size_t>(s) * r.itemsize;
    switch (r.kind) {
      case Ref::Kind::In:
        return static_cast<char*>(const_cast<void*>(a.in_ptr[r.index])) + off;
      case Ref::Kind::Out:
        return static_cast<char*>(a.out_ptr[r.index]) + off;
      case Ref::Kind::Tmp:
        break;
    }
    return base + offset[static_cast<size_t>(r.index)];
  };
  for (int64_t s = begin; s < end; s += f.block) {
    const int64_t len = std::min(f.block, end - s);
    const bool full = len == f.block;
    for (const auto& m : f.members) {
      SmallVec<const void*, 4> ip;
      SmallVec<void*, 2> op;
      for (const Ref& r : m.ins) ip.push_back(at(r, s));
      for (const Ref& r : m.outs) op.push_back(at(r, s));
      std::vector<LocalType> odd_in, odd_out;  // a short block that is not the last one
      const std::vector<LocalType>* in = full ? &m.blk_in : &m.tail_in;
      const std::vector<LocalType>* out = full ? &m.blk_out : &m.tail_out;
      if (!full && (m.tail_out[0].shape.empty() || m.tail_out[0].shape[0] != len)) {
        for (const auto& t : m.blk_in)
          odd_in.push_back({t.shape.empty() ? Shape{} : Shape{len}, t.dtype});
        for (const auto& t : m.blk_out) odd_out.push_back({Shape{len}, t.dtype});
        in = &odd_in;
        out = &odd_out;
      }
      KernelArgs k;
      k.prim = m.prim.get();
      k.in = in;
      k.out = out;
      k.in_ptr = ip.data();
      k.out_ptr = op.data();
      k.busy_devices = kNoSplit;
      m.fn(k);
    }
  }
}

}  // namespace

void fused_elementwise(const KernelArgs& a) {
  const auto& f = static_cast<const FusedElementwise&>(*a.prim);
  // Blocks, not elements, are split between threads, so every block but the last is full.
  parallel_ranges(f.n, kernel_threads(a.busy_devices), kParallelMin, f.block,
                  [&](int64_t b, int64_t e) { run_blocks(f, a, b, e); });
}

}  // namespace tsr::detail::cpu
