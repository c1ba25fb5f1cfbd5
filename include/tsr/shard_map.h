#pragma once
/** shard_map: the per-device view (manual-spmd.md). The body runs once per device on
 *  that device's blocks; its values carry the manual axes they vary over (`vma`,
 *  printed `f32[4]{V:x}`), and collectives (psum & co.) combine blocks across
 *  devices. Works eagerly and under jit.
 *
 *    auto f = shard_map([](const Array& x) { return psum(sum(x), "x"); },
 *                       {.in_specs = P("x"), .out_specs = P()});
 *
 *  Built so far (issue 12): full-manual shard_map over trees, vma typing with
 *  implicit pvary, the out_specs replication check, psum/pmean/pmax/pmin, pvary,
 *  axis_index, axis_size. See docs/design/0011-shard-map.md for the rest. */
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tsr/ad.h"
#include "tsr/array.h"
#include "tsr/collectives.h"
#include "tsr/tree.h"

namespace tsr {

/** shard_map's options (jax.shard_map's keyword arguments). */
struct ShardMapOptions {
  /** The mesh; default the context mesh. */
  std::optional<Mesh> mesh = {};
  /** Specs of the positional arguments, a tree prefix; nullopt: read from the
   *  argument's sharding (every manual axis must be Explicit). */
  tree::Prefix<std::optional<PartitionSpec>> in_specs = {};
  /** Specs of the result, a tree prefix. An axis a spec does not mention is a checked
   *  promise that the output does not vary over it. */
  tree::Prefix<PartitionSpec> out_specs = PartitionSpec();
  /** The manual axes; empty: every mesh axis. */
  std::vector<std::string> axis_names = {};
  /** Type the body's values with vma and check the out_specs promise. */
  bool check_vma = true;
  /** The function's name in errors ("shard_map applied to the function 'f' ...") and
   *  in printed programs; JAX takes the Python function's name. */
  std::string name = "f";
};

namespace detail {

/** shard_map over flat leaves: checks the specs, traces f at block types (calling
 *  `out_specs()` once f has returned, for the outputs' specs) and binds the
 *  shard_map. `paths` name the argument leaves in errors. */
std::vector<Array> shard_map_flat(const FlatFn& f, const std::vector<Array>& args,
                                  const std::vector<std::optional<PartitionSpec>>& in_specs,
                                  const std::vector<std::string>& paths,
                                  const std::function<std::vector<PartitionSpec>()>& out_specs,
                                  const ShardMapOptions& o, const std::string& fn_name);

}  // namespace detail

/** jax.shard_map: f applied to each device's blocks of its arguments (any trees). */
template <class F>
auto shard_map(F f, ShardMapOptions o) {
  return [f = std::move(f), o = std::move(o)](const auto&... args) {
    using Tup = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<decltype(f(args...))>;
    Tup tup(args...);
    auto [leaves, st] = tree::flatten(tup);
    std::vector<std::optional<PartitionSpec>> in =
        tree::broadcast_prefix(o.in_specs, st,
                               {.api = "shard_map",
                                .what = "shard_map in_specs",
                                .of = "the positional arguments",
                                .root = "args"});
    detail::FlatCall<F, Tup> call{f, st, {}};
    auto outs = [&] {
      return tree::broadcast_prefix(o.out_specs, *call.out,
                                    {.api = "shard_map",
                                     .what = "shard_map out_specs",
                                     .of = "the function's result",
                                     .root = "result"});
    };
    std::vector<Array> r =
        detail::shard_map_flat(call.fn(), leaves, in, st.paths("args"), outs, o, o.name);
    return tree::unflatten<R>(*call.out, r);
  };
}

}  // namespace tsr
