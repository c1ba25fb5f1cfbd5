#pragma once
/** Placing whole trees: device_put over a tree (one placement, or a tree prefix of
 *  them) and shard(tree, placement_or_policy). Statics pass through untouched; a leaf
 *  that cannot take its placement is a ValueError naming its key path, type and why. */
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "tsr/array.h"
#include "tsr/tree.h"

namespace tsr {

/** Chooses a leaf's placement from its key path and type:
 *  `[](const std::string& path, const ArrayType& t) { return t.ndim() ? P("data") : P(); }`. */
using ShardPolicy = std::function<Placement(const std::string& path, const ArrayType& type)>;

namespace detail {
/** device_put of every leaf onto its placement; errors name the leaf by key path (from
 *  s, below `root`), its type and the placement, under the tag `api`. */
std::vector<Array> place_leaves(const std::vector<Array>& leaves, const tree::Structure& s,
                                const std::vector<Placement>& where, const char* api,
                                const std::string& root);
/** As place_leaves, with each placement chosen by policy(path, type). */
std::vector<Array> place_leaves(const std::vector<Array>& leaves, const tree::Structure& s,
                                const ShardPolicy& policy, const char* api,
                                const std::string& root);
}  // namespace detail

/** device_put over a tree: one Placement for every leaf, or a tree prefix of
 *  placements (`{P("x"), {{"w", P()}, {"b", P("x")}}}`); each leaf is placed as
 *  device_put(leaf, placement) would (std::monostate: the default placement). */
template <class T>
requires(tree::is_tree_v<T> && !std::is_same_v<T, Array>) T
    device_put(const T& t, const tree::Prefix<Placement>& where) {
  auto [leaves, s] = tree::flatten(t);
  std::vector<Placement> each = tree::broadcast_prefix(
      where, s, {.api = "device_put", .what = "device_put's placements", .of = "the value"});
  return tree::unflatten<T>(s, detail::place_leaves(leaves, s, each, "device_put", ""));
}

/** Places every Array leaf of t on one placement (P("data") fits every rank >= 1,
 *  P() every rank); `root` names t in error paths ("batch" -> 'batch.labels'). */
template <class T>
requires tree::is_tree_v<T> T shard(const T& t, const Placement& where,
                                    const std::string& root = "") {
  auto [leaves, s] = tree::flatten(t);
  std::vector<Placement> each(leaves.size(), where);
  return tree::unflatten<T>(s, detail::place_leaves(leaves, s, each, "shard", root));
}

/** Places every Array leaf of t where policy(path, type) says. */
template <class T>
requires tree::is_tree_v<T> T shard(const T& t, const ShardPolicy& policy,
                                    const std::string& root = "") {
  auto [leaves, s] = tree::flatten(t);
  return tree::unflatten<T>(s, detail::place_leaves(leaves, s, policy, "shard", root));
}

/** The data-parallel policy: leading dimension over `axis` for rank >= 1, scalars
 *  replicated (a policy for shard). */
ShardPolicy batch_sharding(const std::string& axis = "data");

}  // namespace tsr
