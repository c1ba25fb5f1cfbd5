#include "tsr/auto_axes.h"

#include <algorithm>
#include <set>

#include "tsr/error.h"
#include "tsr/mesh.h"
#include "tsr/ops.h"

namespace tsr::detail {
namespace {

// `axes` (default: every axis), each checked to be an axis of `m`.
std::vector<std::string> axes_of(const std::vector<std::string>& axes, const AbstractMesh& m,
                                 const char* api) {
  if (axes.empty()) return m.axis_names();
  for (const auto& a : axes)
    if (m.axis_index(a) < 0)
      throw ValueError(std::string("[") + api + "] axis '" + a +
                       "' is not an axis of the mesh. Got " + m.str() +
                       "; expected one of its axis names. Name an axis of the context mesh.");
  return axes;
}

// The spec of x's type without the axes in `drop`.
PartitionSpec spec_without(const Array& x, const std::set<std::string>& drop,
                           const AbstractMesh& outer) {
  PartitionSpec s = typeof(x).sharding.spec().normalized(x.ndim());
  std::vector<PartitionEntry> e;
  for (const auto& en : s.entries()) {
    Axes kept;
    for (const auto& a : en.axes())
      if (!drop.count(a) && outer.axis_index(a) >= 0 && outer.axis_type(a) == AxisType::Explicit)
        kept.push_back(a);
    e.emplace_back(kept);
  }
  std::set<std::string> u, r;
  for (const auto& a : s.unreduced())
    if (!drop.count(a)) u.insert(a);
  for (const auto& a : s.reduced())
    if (!drop.count(a)) r.insert(a);
  return PartitionSpec(e, u, r, s.unreduced_kind());
}

// JAX refuses to switch a Manual axis (inside a shard_map over it) to Auto or
// Explicit: a body's blocks have no global layout along it to switch to.
void check_not_manual(const std::vector<std::string>& axes, const AbstractMesh& m,
                      const char* api) {
  for (const auto& a : axes)
    if (m.axis_type(a) == AxisType::Manual)
      throw NotImplementedError(
          std::string("[") + api +
          "] Going from `Manual` AxisType to `Auto` or `Explicit` AxisType is not allowed. Got "
          "axis '" +
          a + "', Manual in " + m.str() +
          " (a shard_map body over it); expected axes that are not manual. Name only the other "
          "axes in .axes, or call the function outside the shard_map; if you need this, please "
          "report your use case to the Tessera developers.");
}

}  // namespace

void throw_missing(const char* api, const char* name) {
  throw TypeError(std::string("[") + api + "] Missing required keyword argument: '" + name +
                  "'. Got no " + name +
                  "; expected one placement (or a tree prefix of them). Pass "
                  "{." +
                  name + " = P(...)} in the options.");
}

std::vector<Array> auto_axes_flat(const FlatFn& f, const std::vector<Array>& args,
                                  const std::function<std::vector<Placement>()>& out,
                                  const AutoAxesOptions& o) {
  AbstractMesh cur = get_abstract_mesh();
  // The mesh: the context's, else the out_sharding's (JAX's checks, spec §13.4).
  AbstractMesh given;
  if (o.out_sharding->is_value())
    if (const auto* ns = std::get_if<NamedSharding>(&o.out_sharding->value())) given = ns->mesh();
  if (!cur.empty() && !given.empty() && !(cur == given))
    throw ValueError("[auto_axes] Context mesh " + cur.str() +
                     " must match the mesh passed to shardings " + given.str() +
                     ". Recommended approach is to use `jax.set_mesh` context manager. Enter the "
                     "sharding's mesh with MeshScope, or pass a PartitionSpec.");
  AbstractMesh m = cur.empty() ? given : cur;
  if (m.empty()) return f(args);
  std::vector<std::string> axes = axes_of(o.axes, m, "auto_axes");
  check_not_manual(axes, m, "auto_axes");
  std::vector<std::string> now = m.auto_axes();
  if (std::set<std::string>(axes.begin(), axes.end()) ==
      std::set<std::string>(now.begin(), now.end()))
    return f(args);  // already Auto: a no-op, out_sharding not applied (as JAX)
  std::vector<std::pair<std::string, AxisType>> u;
  for (const auto& a : axes) u.emplace_back(a, AxisType::Auto);
  const std::set<std::string> drop(axes.begin(), axes.end());
  std::vector<Array> res;
  {
    AbstractMesh inner = m.update_axis_types(u);
    std::vector<Array> in = args;
    AbstractMeshScope scope(inner);
    for (auto& x : in)
      if (!typeof(x).sharding.mesh().empty()) x = reshard(x, spec_without(x, drop, m));
    res = f(in);
  }
  std::vector<Placement> where = out();
  for (size_t i = 0; i < res.size(); ++i) res[i] = reshard(res[i], where[i]);
  return res;
}

std::vector<Array> explicit_axes_flat(const FlatFn& f, const std::vector<Array>& args,
                                      const std::vector<Placement>& in,
                                      const ExplicitAxesOptions& o) {
  AbstractMesh m = get_abstract_mesh();
  if (m.empty())
    throw ValueError(
        "[explicit_axes] Context mesh cannot be empty. Please use `jax.set_mesh` API to enter "
        "into a mesh context when using `explicit_axes` API. Got no context mesh; expected one. "
        "Wrap the call in MeshScope(mesh).");
  std::vector<std::string> axes = axes_of(o.axes, m, "explicit_axes");
  check_not_manual(axes, m, "explicit_axes");
  std::vector<std::pair<std::string, AxisType>> u;
  for (const auto& a : axes) u.emplace_back(a, AxisType::Explicit);
  std::vector<Array> res;
  {
    AbstractMeshScope scope(m.update_axis_types(u));
    std::vector<Array> xs;
    for (size_t i = 0; i < args.size(); ++i) xs.push_back(reshard(args[i], in[i]));
    res = f(xs);
  }
  // Back outside: each result keeps only the outer mesh's Explicit axes.
  for (auto& r : res) r = reshard(r, spec_without(r, {}, m));
  return res;
}

}  // namespace tsr::detail
