#pragma once
/** vmap: vectorising map, with JAX's names and semantics (docs/design/0010-vmap.md).
 *
 *    auto per_example = [](const Array& w, const Array& x) { return dot(w, x); };
 *    Array ys = vmap(per_example, {.in_axes = {none, 0}})(w, xs);  // xs: f32[64, 3]
 *
 *  The body sees one example (the mapped dimension removed from each batched leaf,
 *  with its sharding); the batch pass turns every operation into its batched form
 *  (no loop), and the batch dimension keeps the sharding it came in with: vmapping
 *  over `f32[64@x,3]` traces the body with f32[3] and returns results laid out over
 *  x along the batch dimension (spec §12.16). Composes with jit, grad and itself. */
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/ad.h"
#include "tsr/array.h"
#include "tsr/tree.h"

namespace tsr {

/** An in_axes / out_axes entry: the batch dimension, or `none` (not batched). */
using VmapAxis = std::optional<int>;
/** JAX's None in in_axes / out_axes: the leaf is not batched. */
inline constexpr std::nullopt_t none = std::nullopt;

/** vmap's options (jax.vmap's keyword arguments). */
struct VmapOptions {
  /** Where each argument leaf is batched, as a tree prefix of the positional
   *  arguments (one value for all, or one per argument); negative counts from the end. */
  tree::Prefix<VmapAxis> in_axes = 0;
  /** Where each result leaf carries the batch dimension, as a prefix of the result. */
  tree::Prefix<VmapAxis> out_axes = 0;
  /** The batch size when no argument is batched (else checked against them). */
  std::optional<int64_t> axis_size = {};
  /** Names the vmapped axis for collectives in the body (shard_map's issue). */
  std::string axis_name = {};
  /** Mesh axes the batch dimension is sharded over inside the body (when the batched
   *  arguments are not sharded along it already). */
  std::vector<std::string> spmd_axis_name = {};
};

namespace detail {

/** The batched outputs of a flat vmap and the batch they belong to. */
struct VmapFlat {
  std::vector<Array> outs; /**< the outputs */
  std::vector<int> dims;   /**< each output's batch dimension, or -1 */
  int64_t size = 0;        /**< the batch size */
  PartitionEntry entry;    /**< the batch dimension's sharding entry */
  AbstractMesh mesh;       /**< the mesh entry names axes of */
  std::string axis_name;   /**< VmapOptions::axis_name (named in errors) */
};

/** vmap over flat leaves: checks the axes, sizes and shardings (spec §12.16), traces f
 *  per example and batches its program. `paths` name the leaves in errors. */
VmapFlat vmap_flat(const FlatFn& f, const std::vector<Array>& args,
                   const std::vector<VmapAxis>& in_axes, const std::vector<std::string>& paths,
                   const VmapOptions& o);

/** Puts each output's batch dimension where out_axes says (broadcasting unbatched
 *  outputs along it); `paths` name the result leaves in errors. */
std::vector<Array> vmap_outputs(const VmapFlat& r, const std::vector<VmapAxis>& out_axes,
                                const std::vector<std::string>& paths);

}  // namespace detail

/** jax.vmap: f mapped over a batch dimension of its arguments (any trees of Arrays). */
template <class F>
auto vmap(F f, VmapOptions o = {}) {
  return [f = std::move(f), o = std::move(o)](const auto&... args) {
    using Tup = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<decltype(f(args...))>;
    Tup tup(args...);
    auto [leaves, st] = tree::flatten(tup);
    std::vector<VmapAxis> in = tree::broadcast_prefix(
        o.in_axes, st,
        {.api = "vmap", .what = "vmap in_axes", .of = "the positional arguments", .root = "args"});
    detail::FlatCall<F, Tup> call{f, st, {}};
    detail::VmapFlat r = detail::vmap_flat(call.fn(), leaves, in, st.paths("args"), o);
    std::vector<VmapAxis> out = tree::broadcast_prefix(
        o.out_axes, *call.out,
        {.api = "vmap", .what = "vmap out_axes", .of = "the function's result", .root = "result"});
    return tree::unflatten<R>(*call.out, detail::vmap_outputs(r, out, call.out->paths("result")));
  };
}

}  // namespace tsr
