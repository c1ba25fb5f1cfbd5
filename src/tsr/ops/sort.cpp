// Sorting front-ends: jnp.sort / argsort (a sort with an iota, as JAX), lax.sort
// with several operands, lax.top_k and jnp.searchsorted.
#include "tsr/prims/sort.h"
#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"

namespace tsr {
using namespace detail;

namespace {

// An iota along dim with x's shape and sharding (sort needs equal shardings).
Array iota_like(const Array& x, int dim) {
  const ArrayType& t = x.type();
  if (t.sharding.mesh().empty()) return broadcasted_iota(DType::Int32, x.shape(), dim);
  PartitionSpec spec = spec_of(entries_of(t));
  const NamedSharding& cs = x.sharding();
  if (cs.concrete_mesh())
    return broadcasted_iota(DType::Int32, x.shape(), dim, NamedSharding(*cs.concrete_mesh(), spec));
  return broadcasted_iota(DType::Int32, x.shape(), dim, NamedSharding(t.sharding.mesh(), spec));
}

}  // namespace

std::vector<Array> sort(const std::vector<Array>& operands, int dimension, bool is_stable,
                        int num_keys) {
  if (operands.empty())
    throw ValueError("[sort] sort needs at least one operand. Got none; expected one or more.");
  int dim = norm_axis(dimension, operands[0].ndim(), "sort");
  return detail::bind(std::make_shared<prim::Sort>(dim, is_stable, num_keys), operands);
}

Array sort(const Array& x, std::optional<int> axis, bool stable, bool descending) {
  Array arr = axis ? x : ravel(x);
  int dim = axis ? norm_axis(*axis, x.ndim(), "sort") : 0;
  Array r = sort(std::vector<Array>{arr}, dim, stable, 1)[0];
  return descending ? rev(r, {dim}) : r;
}

Array argsort(const Array& x, std::optional<int> axis, bool stable, bool descending) {
  Array arr = axis ? x : ravel(x);
  int dim = axis ? norm_axis(*axis, x.ndim(), "argsort") : 0;
  Array iota = iota_like(arr, dim);
  // Stable descending: reverse first so equal keys keep their order after the
  // final reversal (as jnp.argsort).
  if (descending && stable) {
    arr = rev(arr, {dim});
    iota = rev(iota, {dim});
  }
  Array idx = sort(std::vector<Array>{arr, iota}, dim, stable, 1)[1];
  return descending ? rev(idx, {dim}) : idx;
}

std::pair<Array, Array> top_k(const Array& x, int64_t k) {
  auto r = detail::bind(std::make_shared<prim::TopK>(k), {x});
  return {r[0], r[1]};
}

Array searchsorted(const Array& sorted, const ArrayLike& v, const std::string& side) {
  if (side != "left" && side != "right")
    throw ValueError("[searchsorted] side must be 'left' or 'right'. Got '" + side +
                     "'; expected one of those.");
  std::vector<Array> p = promote({sorted, v}, "searchsorted");
  return bind1(std::make_shared<prim::SearchSorted>(side == "right"), {p[0], p[1]});
}

}  // namespace tsr
