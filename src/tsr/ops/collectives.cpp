// The collectives' user-facing ops (manual-spmd §4): the unbound-axis check, the
// implicit pvary of their operands (§3.4), then the primitive.
#include "tsr/collectives.h"

#include "tsr/ops.h"
#include "tsr/prims/collectives.h"

namespace tsr {

namespace {
void check_bound(const AxisNames& axes, const char* op) { detail::check_axes_bound(axes.names, op); }

Array reduce_over(const Array& x, const AxisNames& axes, detail::ReduceOp op, const char* name) {
  check_bound(axes, name);
  Array y = x;
  if (detail::current_check_vma()) {
    // Auto-pvary (manual-spmd §4): the operand varies over every named axis first.
    std::vector<std::string> add;
    for (const auto& a : axes.names)
      if (!y.type().vma.count(a)) add.push_back(a);
    if (!add.empty()) y = pvary(y, add);
  }
  if (y.dtype() == bool_) y = astype(y, int32);
  return detail::bind1(std::make_shared<prim::Collective>(prim::Collective::Kind::Psum, axes.names,
                                                          op, detail::current_check_vma()),
                       {y});
}
}  // namespace

Array psum(const Array& x, const AxisNames& axes) {
  return reduce_over(x, axes, detail::ReduceOp::Sum, "psum");
}
Array pmax(const Array& x, const AxisNames& axes) {
  return reduce_over(x, axes, detail::ReduceOp::Max, "pmax");
}
Array pmin(const Array& x, const AxisNames& axes) {
  return reduce_over(x, axes, detail::ReduceOp::Min, "pmin");
}
Array pmean(const Array& x, const AxisNames& axes) {
  Array s = psum(x, axes);
  double n = static_cast<double>(axis_size(axes));
  return is_floating(s.dtype()) ? s / n : astype(s, float32) / n;
}
Array pvary(const Array& x, const AxisNames& axes) {
  check_bound(axes, "pvary");
  if (!detail::current_check_vma()) return x;  // §3.8: a no-op without vma checking
  return detail::bind1(std::make_shared<prim::Collective>(prim::Collective::Kind::Pvary, axes.names,
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
  AbstractMesh ctx = get_abstract_mesh();
  int64_t n = 1;
  for (const auto& a : axes.names) n *= ctx.axis_size(a);
  return n;
}

}  // namespace tsr
