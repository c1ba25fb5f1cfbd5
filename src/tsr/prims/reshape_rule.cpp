// reshape's sharding rule (spec §12.7): singleton / split / merge, and which
// cases the kernel can do on local blocks (the others gather the group's dims).
#include "tsr/prims/reshape_rule.h"

#include <functional>

#include "tsr/prims/common.h"
#include "tsr/sharding/format.h"

namespace tsr::detail {
namespace {

struct OneAxis {
  bool ok = false;
  size_t i = 0;           // the dim of `a` that splits
  size_t j0 = 0, j1 = 0;  // into b[j0:j1)
};

// JAX's _split_on_one_axis: b is a with exactly one entry of a split into
// consecutive pieces whose product is that entry.
OneAxis split_on_one_axis(const Shape& a, const Shape& b) {
  OneAxis r;
  if (b.size() <= a.size()) return r;
  size_t i = 0, j = 0;
  bool found = false;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) {
      ++i, ++j;
      continue;
    }
    if (found) return r;
    int64_t prod = 1;
    size_t j0 = j;
    while (j < b.size() && prod < a[i]) prod *= b[j++];
    if (prod != a[i] || j - j0 < 2) return r;
    found = true;
    r.i = i;
    r.j0 = j0;
    r.j1 = j;
    ++i;
  }
  if (i != a.size() || j != b.size() || !found) return r;
  r.ok = true;
  return r;
}

PartitionEntry tuple_entry(const std::vector<std::string>& axes) {
  if (axes.empty()) return PartitionEntry();
  return PartitionEntry(Axes(axes.begin(), axes.end()));
}

}  // namespace

ReshapePlan plan_reshape(const ArrayType& x, const Shape& sizes) {
  ReshapePlan p;
  const AbstractMesh& mesh = x.sharding.mesh();
  auto e = entries_of(x);
  int rank_out = static_cast<int>(sizes.size());
  p.out.assign(static_cast<size_t>(rank_out), PartitionEntry());
  p.in_local = e;
  bool all_none = true;
  for (const auto& en : e) all_none = all_none && en.is_none();
  if (all_none) {
    p.ok = true;
    p.out_local = p.out;
    return p;
  }
  std::vector<int> ia, ib;  // non-1 dims
  Shape A, B;
  for (int d = 0; d < x.ndim(); ++d)
    if (x.shape[d] != 1) ia.push_back(d), A.push_back(x.shape[d]);
  for (int d = 0; d < rank_out; ++d)
    if (sizes[d] != 1) ib.push_back(d), B.push_back(sizes[d]);
  auto size1_copy = [&](std::vector<PartitionEntry>& out) {
    for (int d = 0; d < rank_out; ++d)
      if (sizes[d] == 1 && d < x.ndim() && x.shape[d] == 1) out[d] = e[d];
  };
  if (A == B) {
    for (size_t k = 0; k < ia.size(); ++k) p.out[ib[k]] = e[ia[k]];
    p.ok = true;
    p.out_local = p.out;
    return p;
  }
  OneAxis s = split_on_one_axis(A, B);
  if (s.ok) {
    // Dims outside the split map one to one.
    for (size_t k = 0; k < s.i; ++k) p.out[ib[k]] = e[ia[k]];
    size_t pieces = s.j1 - s.j0;
    for (size_t k = s.i + 1; k < A.size(); ++k) p.out[ib[k + pieces - 1]] = e[ia[k]];
    const PartitionEntry& se = e[ia[s.i]];
    std::vector<std::string> axes(se.axes().begin(), se.axes().end());
    size_t next = 0;
    bool first_takes_all = true;
    for (size_t j = s.j0; j < s.j1; ++j) {
      int64_t o = B[j];
      std::vector<std::string> got;
      while (o > 1 && next < axes.size()) {
        int64_t k = mesh.axis_size(axes[next]);
        if (o % k != 0) return p;  // not divisible: unsupported
        o /= k;
        got.push_back(axes[next++]);
      }
      if (!got.empty() && j != s.j0) first_takes_all = false;
      p.out[ib[j]] = tuple_entry(got);
    }
    if (next != axes.size()) return p;
    size1_copy(p.out);
    p.ok = true;
    p.out_local = p.out;
    if (!first_takes_all) {
      p.in_local[ia[s.i]] = PartitionEntry();
      for (size_t j = s.j0; j < s.j1; ++j) p.out_local[ib[j]] = PartitionEntry();
    }
    return p;
  }
  OneAxis m = split_on_one_axis(B, A);
  if (m.ok) {
    // Operand dims ia[j0..j1) merge into output dim ib[i].
    for (size_t k = 0; k < m.i; ++k) p.out[ib[k]] = e[ia[k]];
    size_t pieces = m.j1 - m.j0;
    for (size_t k = m.i + 1; k < B.size(); ++k) p.out[ib[k]] = e[ia[k + pieces - 1]];
    std::vector<const PartitionEntry*> group;
    for (size_t j = m.j0; j < m.j1; ++j) group.push_back(&e[ia[j]]);
    while (!group.empty() && group.back()->is_none()) group.pop_back();
    std::vector<std::string> axes;
    for (const auto* g : group) {
      if (g->is_none()) return p;  // an unsharded dim before a sharded one
      axes.insert(axes.end(), g->axes().begin(), g->axes().end());
    }
    int64_t o = B[m.i];
    for (const auto& a : axes) {
      int64_t k = mesh.axis_size(a);
      if (o % k != 0) return p;
      o /= k;
    }
    p.out[ib[m.i]] = tuple_entry(axes);
    size1_copy(p.out);
    p.ok = true;
    p.out_local = p.out;
    // Exact locally only when the sharding sits on the major merged dim alone.
    if (group.size() > 1) {
      for (size_t j = m.j0; j < m.j1; ++j) p.in_local[ia[j]] = PartitionEntry();
      p.out_local[ib[m.i]] = PartitionEntry();
    }
    return p;
  }
  return p;
}

}  // namespace tsr::detail
