// Halo exchange by ppermute (design 0021).
#include "tsr/ops/halo.h"

#include "tsr/collectives.h"
#include "tsr/core/trace.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"

namespace tsr::detail {

HaloNeed halo_need(int dim, const PartitionEntry& e, const AbstractMesh& mesh, int64_t n,
                   int64_t out, int64_t window, int64_t stride, int64_t pad_lo) {
  if (e.is_none()) return {};
  const int64_t k = entry_size(e, mesh), L = n / k;
  const int64_t lo = pad_lo, hi = window - stride - lo;
  if (n % k != 0 || L % stride != 0 || out * stride != n || lo < 0 || hi < 0 || lo > L || hi > L)
    return {true, std::nullopt};
  // Windows that tile each block need nothing from the neighbours.
  if (lo == 0 && hi == 0) return {};
  return {false, Halo{dim, std::vector<std::string>(e.axes().begin(), e.axes().end()), k, lo, hi}};
}

bool halo_applies(const ArrayType& t) {
  if (t.sharding.mesh().empty() || !t.sharding.spec().unreduced().empty() ||
      !t.sharding.spec().reduced().empty())
    return false;
  const AbstractMesh& am = t.sharding.mesh();
  for (const auto& n : am.axis_names())
    if (am.axis_type(n) != AxisType::Explicit) return false;
  return true;
}

std::optional<Mesh> halo_mesh(const Array& x) {
  std::optional<Mesh> m;
  if (!current_trace() && x.sharding().concrete_mesh())
    m = *x.sharding().concrete_mesh();
  else if (Mesh c = get_mesh(); !c.empty() && c.abstract_mesh() == x.type().sharding.mesh())
    m = c;
  if (m && m->size() == 1) return std::nullopt;
  return m;
}

Array grow_halos(const Array& b0, const std::vector<Halo>& hs, double fill) {
  Array b = b0;
  for (const auto& h : hs) {
    const int64_t L = b.shape()[static_cast<size_t>(h.dim)];
    const AxisNames axes(h.axes);
    Array j = axis_index(axes);
    auto rows = [&](int64_t from, int64_t to) {
      Shape lo(static_cast<size_t>(b.ndim()), 0), hi = b.shape();
      lo[static_cast<size_t>(h.dim)] = from;
      hi[static_cast<size_t>(h.dim)] = to;
      return slice(b, lo, hi);
    };
    std::vector<Array> parts;
    if (h.lo > 0) {
      std::vector<std::pair<int, int>> right_shift;
      for (int64_t i = 0; i + 1 < h.k; ++i)
        right_shift.emplace_back(static_cast<int>(i), static_cast<int>(i + 1));
      // ppermute leaves zeros where no device sends: the mesh's first block.
      Array left = ppermute(rows(L - h.lo, L), axes, right_shift);
      if (fill != 0.0) left = where(equal(j, 0), full_like(left, fill), left);
      parts.push_back(left);
    }
    parts.push_back(b);
    if (h.hi > 0) {
      std::vector<std::pair<int, int>> left_shift;
      for (int64_t i = 1; i < h.k; ++i)
        left_shift.emplace_back(static_cast<int>(i), static_cast<int>(i - 1));
      Array right = ppermute(rows(0, h.hi), axes, left_shift);
      if (fill != 0.0)
        right = where(equal(j, static_cast<int>(h.k - 1)), full_like(right, fill), right);
      parts.push_back(right);
    }
    b = parts.size() == 1 ? b : concatenate(parts, h.dim);
  }
  return b;
}

}  // namespace tsr::detail
