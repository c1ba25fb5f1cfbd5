#pragma once
/** Parameters with logical axis names, and the rules that map those names onto mesh
 *  axes (Flax's `Partitioned` + `logical_axis_rules`; docs/design/0017). A model built
 *  from `Param`s carries its names in its tree Structure, so `shard` lays out the
 *  model, its gradients and its optimizer slots with no per-model code. */
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tsr/array.h"
#include "tsr/mesh.h"
#include "tsr/sharding.h"
#include "tsr/tree.h"

namespace tsr::nn {

/** One logical name per dimension ("batch", "embed", ...); "" leaves it unnamed. */
using Axes = std::vector<std::string>;

/** A parameter: one Array leaf and its logical names (a static of the tree). */
struct Param {
  Array value; /**< the parameter */
  Axes names;  /**< one logical name per dimension of value */
};
TSR_TREE(Param, value, names)

/** Logical name -> mesh axes, ordered: the first entry for a name wins. */
struct Rules {
  /** (logical name, mesh axes major first); an empty list leaves the name unsharded. */
  std::vector<std::pair<std::string, std::vector<std::string>>> table;
  std::string name; /**< for printing: "dp+tp" */
  /** Same table and name. */
  bool operator==(const Rules&) const = default;
};

/** The preset rules on a mesh with axes "data" and "model": dp | tp | fsdp | dp+tp |
 *  fsdp+tp (docs/design/0017's table); ValueError listing them for another name. */
Rules rules_preset(const std::string& name);
/** The names rules_preset accepts, in the order above. */
std::vector<std::string> rules_preset_names();

/** The spec of a value whose dimensions carry `names`: each name's mesh axes by the
 *  first matching rule; a mesh axis already used by an earlier dimension is dropped
 *  (Flax). ValueError when a rule names a mesh axis the mesh lacks. */
PartitionSpec logical_to_spec(const Axes& names, const Rules& rules, const Mesh& mesh);
/** The same against an abstract mesh (inside jit, the context's). */
PartitionSpec logical_to_spec(const Axes& names, const Rules& rules, const AbstractMesh& mesh);

/** with_sharding_constraint by logical names against the context mesh: pins what the
 *  rules map (logical_to_spec's axes; a rule to no axes pins the dimension unsharded)
 *  and leaves UNCONSTRAINED a dimension no rule shards (unnamed, no rule, or its axes
 *  taken by an earlier dimension), so the propagation pass may use idle mesh axes
 *  there (on a (4, 2) mesh under "tp" it splits the batch over 'data' by itself). The
 *  identity when there is no context mesh or it has one device. ValueError when names
 *  do not match x's rank. */
Array constrain(const Array& x, const Axes& names, const Rules& rules);

namespace detail {
/** Per leaf of s (depth first): the names of the Param holding it, or nullptr. The
 *  pointers live as long as s. */
std::vector<const Axes*> param_names(const tree::Structure& s);
/** Every leaf placed by its Param names (other leaves replicated); one ValueError
 *  listing every leaf that cannot be placed. */
std::vector<Array> shard_leaves(const std::vector<Array>& leaves, const tree::Structure& s,
                                const Rules& rules, const Mesh& mesh);
/** (path, spec) per leaf of s, without placing anything. */
std::vector<std::pair<std::string, PartitionSpec>> leaf_specs(const tree::Structure& s,
                                                              const Rules& rules, const Mesh& mesh);
}  // namespace detail

/** The tree with every Param's value placed on `mesh` by its names and `rules`, and
 *  every other Array leaf replicated. Collects every leaf's error (a dimension its
 *  mesh axes do not divide, names of the wrong length) into one ValueError listing
 *  each failing leaf's path. */
template <class T>
T shard(const T& tree, const Rules& rules, const Mesh& mesh) {
  auto [leaves, s] = tree::flatten(tree);
  return tree::unflatten<T>(s, detail::shard_leaves(leaves, s, rules, mesh));
}

/** Each leaf's key path and the spec shard() would give it (for printing a layout). */
template <class T>
std::vector<std::pair<std::string, PartitionSpec>> logical_specs(const T& tree, const Rules& rules,
                                                                 const Mesh& mesh) {
  return detail::leaf_specs(tree::structure(tree), rules, mesh);
}

/** Number of elements over every Array leaf of tree (a model's parameter count). */
template <class T>
int64_t param_count(const T& tree) {
  int64_t n = 0;
  for (const Array& a : tree::leaves(tree)) n += a.valid() ? a.size() : 0;
  return n;
}

}  // namespace tsr::nn
