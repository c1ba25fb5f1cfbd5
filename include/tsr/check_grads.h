#pragma once
/** jax.test_util.check_grads: a function's derivatives checked against finite
 *  differences, along one pseudo-random direction per check.
 *
 *    check_grads([](const Array& x) { return sum(sin(x) * x); }, x, 2);
 *    check_grads(f, std::make_tuple(w, b), 1, {.modes = {GradMode::Rev}});
 *
 *  Fwd: the jvp's tangent against central differences (and its primal against f);
 *  Rev: the vjp by the dot-product identity <vjp(ct), v> == <ct, jvp(v)>. Up to
 *  `order`, the derivative functions are checked the same way, recursively (JAX's
 *  recursion: the jvp map (x, v) -> (f(x), tangent) and the vjp map (x, ct) ->
 *  cotangents). A mismatch raises AssertionError naming the check ("JVP of VJP") and
 *  the element. Beyond JAX: tangents and cotangents must also have their types,
 *  shardings included (a tangent its primal's, a cotangent its input's cotangent
 *  type). Float leaves are differentiated; integer and bool leaves pass through. */
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tsr/ad_core.h"
#include "tsr/array.h"
#include "tsr/tree.h"

namespace tsr {

/** Which derivatives check_grads checks (JAX's modes "fwd" and "rev"). */
enum class GradMode {
  Fwd, /**< jvp against finite differences */
  Rev  /**< vjp against the jvp (dot-product identity) */
};

/** check_grads' keyword arguments. */
struct CheckGradsOptions {
  /** The modes, as JAX's modes=("fwd", "rev"). */
  std::vector<GradMode> modes = {GradMode::Fwd, GradMode::Rev};
  /** Absolute tolerance; default by the result's dtype (JAX's: float64 1e-5, float32
   *  2e-3, float16 1e-2, bfloat16 1e-1). */
  std::optional<double> atol = {};
  /** Relative tolerance; default as atol. */
  std::optional<double> rtol = {};
  /** The finite-difference step. */
  double eps = 1e-4;
  /** Beyond JAX: false skips the comparison of jvp with finite differences (for
   *  functions where differences are unreliable); the types are still checked, and Rev
   *  compares the vjp with the jvp when Fwd is also checked. */
  bool finite_differences = true;
};

namespace detail {
/** check_grads over flat leaves; `what` prefixes the messages. */
void check_grads_flat(const FlatFn& f, const std::vector<Array>& args, int order,
                      const CheckGradsOptions& o = {});
/** A deterministic pseudo-random array like x (shape, dtype and sharding), values in
 *  [-1, 1]; `salt` varies it (check_grads' directions). */
Array direction_like(const Array& x, int salt);
}  // namespace detail

/** jax.test_util.check_grads(f, args, order, modes, atol, rtol, eps): `args` is the
 *  tuple of positional arguments (trees); AssertionError on a mismatch. */
template <class F, class... Args>
void check_grads(F f, const std::tuple<Args...>& args, int order, const CheckGradsOptions& o = {}) {
  using Tup = std::tuple<std::decay_t<Args>...>;
  Tup tup = args;
  auto [leaves, st] = tree::flatten(tup);
  detail::FlatFn flat = [&f, st = st](const std::vector<Array>& l) {
    return tree::flatten(std::apply(f, tree::unflatten<Tup>(st, l))).first;
  };
  detail::check_grads_flat(flat, leaves, order, o);
}

/** check_grads of a function of one Array. */
template <class F>
void check_grads(F f, const Array& x, int order, const CheckGradsOptions& o = {}) {
  check_grads(std::move(f), std::make_tuple(x), order, o);
}

}  // namespace tsr
