#pragma once
// auto_axes / explicit_axes (spec §13.4, §13.5): run a function with some mesh axes
// switched to Auto (the propagation pass lays them out, types drop them) or to
// Explicit (sharding in types), resharding at the boundary.
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tsr/ad.h"
#include "tsr/array.h"
#include "tsr/tree.h"

namespace tsr {

/** Options of auto_axes. */
struct AutoAxesOptions {
  /** The axes made Auto inside; empty: every axis of the mesh. */
  std::vector<std::string> axes = {};
  /** Where the results go back in the outer context (a tree prefix); required. */
  std::optional<tree::Prefix<Placement>> out_sharding = {};
};

/** Options of explicit_axes. */
struct ExplicitAxesOptions {
  /** The axes made Explicit inside; empty: every axis of the mesh. */
  std::vector<std::string> axes = {};
  /** Where the arguments go inside (a tree prefix of the arguments); required. */
  std::optional<tree::Prefix<Placement>> in_sharding = {};
};

namespace detail {

/** auto_axes over flat leaves; `out` gives the results' placements once f ran. */
std::vector<Array> auto_axes_flat(const FlatFn& f, const std::vector<Array>& args,
                                  const std::function<std::vector<Placement>()>& out,
                                  const AutoAxesOptions& o);
/** explicit_axes over flat leaves with the arguments' placements `in`. */
std::vector<Array> explicit_axes_flat(const FlatFn& f, const std::vector<Array>& args,
                                      const std::vector<Placement>& in,
                                      const ExplicitAxesOptions& o);
/** TypeError "Missing required keyword argument: '{name}'" naming `api`. */
[[noreturn]] void throw_missing(const char* api, const char* name);

}  // namespace detail

/** JAX's jax.sharding.auto_axes: `f` runs with `axes` Auto (absent from types; the
 *  propagation pass lays them out); each argument is first resharded to its spec
 *  without them, and the results are resharded to `out_sharding` outside. */
template <class F>
auto auto_axes(F f, AutoAxesOptions o) {
  return [f = std::move(f), o = std::move(o)](const auto&... args) {
    using Tup = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<decltype(f(args...))>;
    if (!o.out_sharding) detail::throw_missing("auto_axes", "out_sharding");
    Tup tup(args...);
    auto [leaves, st] = tree::flatten(tup);
    detail::FlatCall<F, Tup> call{f, st, {}};
    auto outs = [&] {
      return tree::broadcast_prefix(*o.out_sharding, *call.out,
                                    {.api = "auto_axes",
                                     .what = "auto_axes out_sharding",
                                     .of = "the function's result",
                                     .root = "result"});
    };
    std::vector<Array> r = detail::auto_axes_flat(call.fn(), leaves, outs, o);
    return tree::unflatten<R>(*call.out, r);
  };
}

/** JAX's jax.sharding.explicit_axes: `f` runs with `axes` Explicit (sharding in
 *  types); the arguments are resharded to `in_sharding` inside, and each result goes
 *  back as its spec keeping only the outer mesh's Explicit axes. */
template <class F>
auto explicit_axes(F f, ExplicitAxesOptions o) {
  return [f = std::move(f), o = std::move(o)](const auto&... args) {
    using Tup = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<decltype(f(args...))>;
    if (!o.in_sharding) detail::throw_missing("explicit_axes", "in_sharding");
    Tup tup(args...);
    auto [leaves, st] = tree::flatten(tup);
    std::vector<Placement> in = tree::broadcast_prefix(*o.in_sharding, st,
                                                       {.api = "explicit_axes",
                                                        .what = "explicit_axes in_sharding",
                                                        .of = "the positional arguments",
                                                        .root = "args"});
    detail::FlatCall<F, Tup> call{f, st, {}};
    std::vector<Array> r = detail::explicit_axes_flat(call.fn(), leaves, in, o);
    return tree::unflatten<R>(*call.out, r);
  };
}

}  // namespace tsr
