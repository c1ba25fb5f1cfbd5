// The collectives' user-facing ops (manual-spmd §4): the unbound-axis check, the
// implicit pvary of their operands (§3.4), then the primitive.
#include "tsr/collectives.h"

#include "tsr/ops.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/collectives_layout.h"
#include "tsr/prims/common.h"
#include "tsr/prims/pcast.h"

namespace tsr {

namespace {
void check_bound(const AxisNames& axes, const char* op) {
  detail::check_axes_bound(axes.names, op);
}

// Auto-pvary (manual-spmd §4): the operand varies over every named axis first.
Array vary_over(const Array& x, const AxisNames& axes) {
  if (!detail::current_check_vma()) return x;
  std::vector<std::string> add;  // manual mesh axes only: a vmap's axis_name is untyped
  for (const auto& a : axes.names)
    if (!x.type().vma.count(a) && !detail::vmap_axis_size(a)) add.push_back(a);
  return add.empty() ? x : pvary(x, add);
}

Array reduce_over(const Array& x, const AxisNames& axes, detail::ReduceOp op, const char* name,
                  const AxisIndexGroups& groups) {
  check_bound(axes, name);
  const bool check_vma = detail::current_check_vma();
  // Before the implicit pvary, so the error names the user's op; the rule checks the
  // groups again for hand-built programs.
  prim::check_reduce_groups(name, axes.names, groups, check_vma);
  Array y = vary_over(x, axes);
  if (y.dtype() == bool_) y = astype(y, int32);
  return detail::bind1(std::make_shared<prim::Collective>(prim::Collective::Kind::Psum, axes.names,
                                                          op, check_vma, groups),
                       {y});
}
}  // namespace

Array psum(const Array& x, const AxisNames& axes) { return psum(x, axes, PsumOptions{}); }
Array psum(const Array& x, const AxisNames& axes, const PsumOptions& o) {
  if (o.axis_index_groups.empty())
    if (auto r = detail::psum_of_unreduced(x, axes.names)) return *r;  // §3.6
  return reduce_over(x, axes, detail::ReduceOp::Sum, "psum", o.axis_index_groups);
}
Array pmax(const Array& x, const AxisNames& axes) { return pmax(x, axes, PsumOptions{}); }
Array pmax(const Array& x, const AxisNames& axes, const PsumOptions& o) {
  return reduce_over(x, axes, detail::ReduceOp::Max, "pmax", o.axis_index_groups);
}
Array pmin(const Array& x, const AxisNames& axes) { return pmin(x, axes, PsumOptions{}); }
Array pmin(const Array& x, const AxisNames& axes, const PsumOptions& o) {
  return reduce_over(x, axes, detail::ReduceOp::Min, "pmin", o.axis_index_groups);
}
Array pmean(const Array& x, const AxisNames& axes) { return pmean(x, axes, PsumOptions{}); }
Array pmean(const Array& x, const AxisNames& axes, const PsumOptions& o) {
  Array s = psum(x, axes, o);
  // The group's size: psum checked the groups (equal sizes), so the first one's.
  const auto& g = o.axis_index_groups;
  double n = static_cast<double>(g.empty() ? axis_size(axes) : static_cast<int64_t>(g[0].size()));
  return is_floating(s.dtype()) ? s / n : astype(s, float32) / n;
}
Array pvary(const Array& x, const AxisNames& axes) {
  check_bound(axes, "pvary");
  if (!detail::current_check_vma()) return x;  // §3.8: a no-op without vma checking
  std::vector<std::string> mesh_axes;          // a vmap's axis_name is not typed
  for (const auto& a : axes.names)
    if (!detail::vmap_axis_size(a)) mesh_axes.push_back(a);
  if (mesh_axes.empty()) return x;
  return detail::bind1(std::make_shared<prim::Collective>(prim::Collective::Kind::Pvary, mesh_axes,
                                                          detail::ReduceOp::Sum, true),
                       {x});
}
Array axis_index(const AxisNames& axes) {
  check_bound(axes, "axis_index");
  return detail::bind1(
      std::make_shared<prim::Collective>(prim::Collective::Kind::AxisIndex, axes.names,
                                         detail::ReduceOp::Sum, detail::current_check_vma()),
      {});
}
int64_t axis_size(const AxisNames& axes) {
  check_bound(axes, "axis_size");
  int64_t n = 1;
  for (const auto& a : axes.names) n *= detail::bound_axis_size(a);
  return n;
}

namespace {
using LC = prim::LayoutCollective;
Array move(const Array& x, LC::Params p, const char* op) {
  check_bound(p.axes, op);
  p.check_vma = detail::current_check_vma();
  Array y = p.kind == LC::Kind::Pbroadcast ? x : vary_over(x, p.axes);
  return detail::bind1(std::make_shared<LC>(std::move(p)), {y});
}
}  // namespace

Array all_gather(const Array& x, const AxisNames& axes, const AllGatherOptions& o) {
  LC::Params p{.kind = LC::Kind::AllGather, .axes = axes.names};
  int out_rank = x.ndim() + (o.tiled ? 0 : 1);
  p.dim = detail::norm_axis(o.axis, out_rank, "all_gather");
  p.tiled = o.tiled;
  p.invariant = o.invariant;
  p.groups = o.axis_index_groups;
  return move(x, std::move(p), "all_gather");
}

Array psum_scatter(const Array& x, const AxisNames& axes, const PsumScatterOptions& o) {
  LC::Params p{.kind = LC::Kind::ReduceScatter, .axes = axes.names};
  p.dim = detail::norm_axis(o.scatter_dimension, x.ndim(), "psum_scatter");
  p.tiled = o.tiled;
  p.groups = o.axis_index_groups;
  return move(x.dtype() == bool_ ? astype(x, int32) : x, std::move(p), "psum_scatter");
}

Array ppermute(const Array& x, const AxisNames& axes,
               const std::vector<std::pair<int, int>>& perm) {
  LC::Params p{.kind = LC::Kind::Ppermute, .axes = axes.names};
  p.perm = perm;
  return move(x, std::move(p), "ppermute");
}

Array pshuffle(const Array& x, const AxisNames& axes, const std::vector<int>& perm) {
  std::vector<char> hit(perm.size(), 0);
  bool ok = true;
  for (int s : perm) {
    ok = ok && s >= 0 && s < static_cast<int>(perm.size()) && !hit[static_cast<size_t>(s)];
    if (ok) hit[static_cast<size_t>(s)] = 1;
  }
  if (!ok) {
    std::string p = "[";
    for (size_t i = 0; i < perm.size(); ++i) p += (i ? ", " : "") + std::to_string(perm[i]);
    throw ValueError("[pshuffle] `perm` does not represent a permutation: " + p +
                     "]. Got that; expected each index of 0.." +
                     std::to_string(static_cast<int>(perm.size()) - 1) +
                     " once. Use ppermute for partial permutations.");
  }
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < perm.size(); ++i) pairs.emplace_back(perm[i], static_cast<int>(i));
  return ppermute(x, axes, pairs);
}

Array all_to_all(const Array& x, const AxisNames& axes, int split_axis, int concat_axis,
                 bool tiled) {
  return all_to_all(x, axes, split_axis, concat_axis, AllToAllOptions{.tiled = tiled});
}

Array all_to_all(const Array& x, const AxisNames& axes, int split_axis, int concat_axis,
                 const AllToAllOptions& o) {
  LC::Params p{.kind = LC::Kind::AllToAll, .axes = axes.names};
  p.dim = detail::norm_axis(split_axis, x.ndim(), "all_to_all");
  // Untiled, concat_axis indexes the shape after the split dimension's removal (the
  // rule checks its range); negative values count from the operand's rank, as JAX.
  p.dim2 = concat_axis < 0 ? concat_axis + x.ndim() : concat_axis;
  p.tiled = o.tiled;
  p.groups = o.axis_index_groups;
  return move(x, std::move(p), "all_to_all");
}

Array pswapaxes(const Array& x, const AxisNames& axes, int axis,
                const AxisIndexGroups& axis_index_groups) {
  return all_to_all(x, axes, axis, axis, AllToAllOptions{.axis_index_groups = axis_index_groups});
}

Array pbroadcast(const Array& x, const AxisNames& axes, int source) {
  LC::Params p{.kind = LC::Kind::Pbroadcast, .axes = axes.names};
  p.source = source;
  return move(x, std::move(p), "pbroadcast");
}

}  // namespace tsr
