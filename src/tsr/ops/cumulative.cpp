// Cumulative front-ends (jnp.cumsum & co.): dtype promotion as jnp, axis=None
// flattens a fully replicated input (spec §12.12), then one Cumulative primitive.
#include "tsr/prims/cumulative.h"
#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"

namespace tsr {
using namespace detail;
using prim::CumKind;

namespace {

bool fully_replicated(const ArrayType& t) {
  for (const auto& e : entries_of(t))
    if (!e.is_none()) return false;
  return unreduced_of(t).empty() && reduced_of(t).empty();
}

Array cumulative(CumKind k, const Array& x0, std::optional<int> axis, const CumOptions& o) {
  const char* op = prim::cum_name(k);
  Array x = x0;
  if (o.dtype) {
    check_dtype(*o.dtype, op);
    x = astype(x, *o.dtype);
  } else if (x.dtype() == DType::Bool && k != CumKind::LogSumExp) {
    // jnp's _cumulative_reduction promotes only bool (to the default int); integers
    // keep their dtype, unlike jnp.sum.
    x = astype(x, DType::Int32);
  } else if (k == CumKind::LogSumExp && !is_floating(x.dtype())) {
    x = astype(x, DType::Float32);
  }
  int ax = 0;
  if (!axis) {
    if (!fully_replicated(x0.type()))
      throw ShardingTypeError(std::string("[") + op +
                              "] The input should be fully replicated when axis is not specified "
                              "to " +
                              op + ". Got input type=" + x0.type().str() +
                              ". Pass an axis, or reshard the input to P() first.");
    x = reshape(x, {x.size()});
  } else {
    ax = norm_axis(*axis, x.ndim(), op);
  }
  return bind1(std::make_shared<prim::Cumulative>(k, ax, o.reverse), {x});
}

}  // namespace

Array cumsum(const Array& x, std::optional<int> axis, const CumOptions& o) {
  return cumulative(CumKind::Sum, x, axis, o);
}
Array cumprod(const Array& x, std::optional<int> axis, const CumOptions& o) {
  return cumulative(CumKind::Prod, x, axis, o);
}
Array cummax(const Array& x, std::optional<int> axis, const CumOptions& o) {
  return cumulative(CumKind::Max, x, axis, o);
}
Array cummin(const Array& x, std::optional<int> axis, const CumOptions& o) {
  return cumulative(CumKind::Min, x, axis, o);
}
Array cumlogsumexp(const Array& x, std::optional<int> axis, const CumOptions& o) {
  return cumulative(CumKind::LogSumExp, x, axis, o);
}

}  // namespace tsr
