#pragma once
/** jax.eval_shape and jax.ShapeDtypeStruct: the types of a function's result (shapes,
 *  dtypes, shardings, varying axes) without running it.
 *
 *    Array x = shape_dtype_struct({8, 4}, float32, P("x"));   // no data
 *    Array y = eval_shape([](const Array& a) { return sum(a, 1); }, x);
 *    typeof(y).str();                                          // "f32[8@x]"
 *
 *  The results are abstract arrays: typeof, shape(), dtype() and sharding() work;
 *  reading their data (to_vector, item, bool) or passing them to an op raises
 *  ConcretizationTypeError. eval_shape accepts them (and concrete arrays, whose data
 *  it never reads) as arguments. */
#include <tuple>
#include <type_traits>
#include <vector>

#include "tsr/ad.h"
#include "tsr/array.h"
#include "tsr/tree.h"

namespace tsr {

/** jax.ShapeDtypeStruct(shape, dtype, sharding=): an abstract array of that type, with
 *  no data (the sharding as device_put would place it; default replicated). */
Array shape_dtype_struct(const Shape& shape, DType dtype = float32, const Placement& sharding = {});

/** True for an abstract array (from shape_dtype_struct or eval_shape). */
bool is_abstract(const Array& x);

namespace detail {
/** eval_shape over flat leaves: traces f at the leaves' types; abstract results. */
std::vector<Array> eval_shape_flat(const FlatFn& f, const std::vector<Array>& args);
}  // namespace detail

/** jax.eval_shape: f's result (any tree) with abstract arrays as leaves, computed by
 *  tracing f once at the arguments' types; nothing runs and no buffer is allocated. */
template <class F, class... Args>
auto eval_shape(F f, const Args&... args) {
  using Tup = std::tuple<std::decay_t<Args>...>;
  using R = std::decay_t<decltype(f(args...))>;
  Tup tup(args...);
  auto [leaves, st] = tree::flatten(tup);
  detail::FlatCall<F, Tup> call{f, st, {}};
  std::vector<Array> out = detail::eval_shape_flat(call.fn(), leaves);
  return tree::unflatten<R>(*call.out, out);
}

}  // namespace tsr
