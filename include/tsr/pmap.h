#pragma once
/** pmap: one instance of f per device, as JAX's pmap (manual-spmd §7). The mapped
 *  dimension (size N) is split so device k gets slice k with that dimension removed;
 *  results are stacked along out_axes and stay laid out over the devices.
 *
 *    Array data = reshape(arange(0.0, 20.0), {4, 5});
 *    Array y = pmap([](const Array& row) { return psum(row, "i"); },
 *                   {.axis_name = "i"})(data);  // `f32[4@i,5]`, every row the column sums
 *
 *  It is sugar over shard_map (as JAX since 0.8): a 1-D mesh over the first N devices
 *  named axis_name, in_specs P(None * axis, axis_name) (P() for none), the body
 *  squeezing the mapped dimension and re-inserting it at out_axes, and
 *  check_vma=false (no vma types, no implicit pvary, out_axes=none is unchecked and
 *  returns device 0's copy). Nested pmap is an error, as in JAX. */
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/ad.h"
#include "tsr/array.h"
#include "tsr/collectives.h"
#include "tsr/tree.h"
#include "tsr/vmap.h"

namespace tsr {

/** A pmap in_axes / out_axes entry: the mapped dimension, or `none` (broadcast in,
 *  replicated out). */
using PmapAxis = std::optional<int>;

/** The axis name pmap uses when none is given (JAX's). */
inline constexpr const char* kPmapDefaultAxisName = "_internal_pmap_axis_name";

/** pmap's options (jax.pmap's keyword arguments). */
struct PmapOptions {
  /** Names the device axis for collectives in f; empty: "_internal_pmap_axis_name". */
  std::string axis_name = {};
  /** Where each argument leaf is mapped, a tree prefix of the positional arguments;
   *  negative counts from the end. */
  tree::Prefix<PmapAxis> in_axes = 0;
  /** Where each result leaf gets the device dimension, a prefix of the result; none:
   *  the result is the same on every device (unchecked; device 0's copy is returned). */
  tree::Prefix<PmapAxis> out_axes = 0;
  /** The devices, in order (instance k runs on devices[k]); default tsr::devices().
   *  Under several processes they must be given, all of one process (JAX's global
   *  pmap axis is not built: use shard_map over a mesh of every device). */
  std::optional<std::vector<Device>> devices = {};
  /** The mapped size, checked against the arguments' when given. */
  std::optional<int64_t> axis_size = {};
};

namespace detail {

/** The flat out_axes of a pmap's result and the result leaves' paths (for errors). */
struct PmapOutAxes {
  std::vector<PmapAxis> axes;     /**< one per result leaf */
  std::vector<std::string> paths; /**< the leaves' key paths */
};

/** The checks jax.pmap makes when it is called (devices non-empty). */
void check_pmap_options(const PmapOptions& o);

/** pmap over flat leaves: checks axes, sizes and devices, places the arguments on the
 *  1-D mesh and runs the rank-reducing shard_map. `out_axes()` is called once f has
 *  returned; `paths` name the argument leaves in errors. */
std::vector<Array> pmap_flat(const FlatFn& f, const std::vector<Array>& args,
                             const std::vector<PmapAxis>& in_axes,
                             const std::vector<std::string>& paths,
                             const std::function<PmapOutAxes()>& out_axes, const PmapOptions& o);

}  // namespace detail

/** jax.pmap: f applied on each device to its slice of the arguments (any trees). */
template <class F>
auto pmap(F f, PmapOptions o = {}) {
  detail::check_pmap_options(o);
  return [f = std::move(f), o = std::move(o)](const auto&... args) {
    using Tup = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<decltype(f(args...))>;
    Tup tup(args...);
    auto [leaves, st] = tree::flatten(tup);
    std::vector<PmapAxis> in = tree::broadcast_prefix(
        o.in_axes, st,
        {.api = "pmap", .what = "pmap in_axes", .of = "the positional arguments", .root = "args"});
    detail::FlatCall<F, Tup> call{f, st, {}};
    auto outs = [&] {
      return detail::PmapOutAxes{tree::broadcast_prefix(o.out_axes, *call.out,
                                                        {.api = "pmap",
                                                         .what = "pmap out_axes",
                                                         .of = "the function's result",
                                                         .root = "result"}),
                                 call.out->paths("result")};
    };
    std::vector<Array> r = detail::pmap_flat(call.fn(), leaves, in, st.paths("args"), outs, o);
    return tree::unflatten<R>(*call.out, r);
  };
}

}  // namespace tsr
