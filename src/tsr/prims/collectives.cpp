#include "tsr/prims/collectives.h"

#include <algorithm>
#include <set>

#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/pcast.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::detail {
namespace {
thread_local bool t_check_vma = true;
}  // namespace

bool current_check_vma() { return t_check_vma; }
CheckVmaScope::CheckVmaScope(bool v) : prev(t_check_vma) { t_check_vma = v; }
CheckVmaScope::~CheckVmaScope() { t_check_vma = prev; }

namespace {
thread_local std::vector<std::pair<std::string, int64_t>> t_vmap_names;
}  // namespace

VmapNameScope::VmapNameScope(std::string name, int64_t size) : pushed_(!name.empty()) {
  if (pushed_) t_vmap_names.emplace_back(std::move(name), size);
}
VmapNameScope::~VmapNameScope() {
  if (pushed_) t_vmap_names.pop_back();
}

int64_t vmap_axis_size(const std::string& name) {
  for (auto it = t_vmap_names.rbegin(); it != t_vmap_names.rend(); ++it)
    if (it->first == name) return it->second;
  return 0;
}

std::string axis_env_key() {
  if (t_check_vma && t_vmap_names.empty()) return "";
  std::string k = t_check_vma ? "vma" : "novma";
  for (const auto& [n, size] : t_vmap_names) k += ";" + n + "=" + std::to_string(size);
  return k;
}

int64_t bound_axis_size(const std::string& name) {
  int64_t v = vmap_axis_size(name);
  return v ? v : get_abstract_mesh().axis_size(name);
}

void check_axes_bound(const std::vector<std::string>& axes, const char* op) {
  AbstractMesh ctx = get_abstract_mesh();
  for (const auto& a : axes)
    if (vmap_axis_size(a) == 0 &&
        (ctx.empty() || ctx.axis_index(a) < 0 || ctx.axis_type(a) != AxisType::Manual))
      throw NameError(std::string("[") + op + "] Found an unbound axis name: " + a +
                      ". To fix this, please call " + op + " under `tsr::shard_map`. Got axis '" +
                      a + "'; expected a manual axis of the enclosing shard_map.");
}

}  // namespace tsr::detail

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("psum") && register_primitive("pmax") && register_primitive("pmin") &&
    register_primitive("pvary") && register_primitive("axis_index") &&
    declare_ad("psum", AdKind::Linear) &&
    declare_ad("pmax", AdKind::NonDifferentiable,
               "JAX has no derivative for pmax: its jvp raises NotImplementedError") &&
    declare_ad("pmin", AdKind::NonDifferentiable,
               "JAX has no derivative for pmin: its jvp raises NotImplementedError") &&
    declare_ad("pvary", AdKind::Linear) &&
    declare_ad("axis_index", AdKind::NonDifferentiable, "integer result");
}  // namespace

std::string axis_names_tuple(const std::vector<std::string>& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.size(); ++i) s += (i ? ", '" : "'") + a[i] + "'";
  return s + (a.size() == 1 ? ",)" : ")");
}

std::string axis_set_str(const std::set<std::string>& axes) {
  std::string r = "{";
  bool first = true;
  for (const auto& a : axes) {
    r += (first ? "" : ",") + a;
    first = false;
  }
  return r + "}";
}

std::string groups_str(const AxisIndexGroups& g) {
  std::string s = "(";
  for (size_t i = 0; i < g.size(); ++i) {
    s += i ? ", (" : "(";
    for (size_t j = 0; j < g[i].size(); ++j) s += (j ? ", " : "") + std::to_string(g[i][j]);
    s += g[i].size() == 1 ? ",)" : ")";
  }
  return s + (g.size() == 1 ? ",)" : ")");
}

int64_t check_axis_index_groups(const AxisIndexGroups& g, int64_t n, const char* op,
                                const std::vector<std::string>& axes) {
  if (g.empty()) return n;
  const std::string pre = std::string("[") + op + "] ";
  const std::string got = "axis_index_groups=" + groups_str(g) + " for axes " +
                          axis_names_tuple(axes) + " of size " + std::to_string(n);
  std::vector<int> seen(static_cast<size_t>(n), 0);
  std::string wrong;
  for (const auto& grp : g)
    for (int i : grp) {
      if (i < 0 || i >= n) {
        if (wrong.empty()) wrong = "index " + std::to_string(i) + " is out of range";
      } else if (seen[static_cast<size_t>(i)]++ == 1 && wrong.empty()) {
        wrong = "index " + std::to_string(i) + " appears twice";
      }
    }
  for (int64_t i = 0; i < n && wrong.empty(); ++i)
    if (!seen[static_cast<size_t>(i)]) wrong = "index " + std::to_string(i) + " is missing";
  if (!wrong.empty())
    throw ValueError(pre + "axis_index_groups must cover all indices exactly once. Got " + got +
                     " (" + wrong + "); expected each index of 0.." + std::to_string(n - 1) +
                     " in exactly one group. List every index of the axes once.");
  for (const auto& grp : g)
    if (grp.size() != g[0].size())
      throw ValueError(pre + "axis_index_groups must all be the same size. Got " + got +
                       " (groups of " + std::to_string(g[0].size()) + " and " +
                       std::to_string(grp.size()) +
                       " indices); expected one size for every group, since the group size "
                       "sets the result's shape. Split the indices into groups of equal size.");
  return static_cast<int64_t>(g[0].size());
}

void refuse_vmap_groups(const char* op, const std::string& axis, const AxisIndexGroups& g) {
  throw NotImplementedError(
      std::string("[") + op + "] axis_index_groups not supported in vmap collectives. Got " + op +
      " over the vmap axis '" + axis + "' with axis_index_groups=" + groups_str(g) +
      "; expected no groups over a vmap's axis_name (JAX refuses them "
      "too). Mask the operand with axis_index instead.");
}

void check_no_vmap_groups(const char* op, const std::vector<std::string>& axes,
                          const AxisIndexGroups& g) {
  if (g.empty()) return;
  for (const auto& a : axes)
    if (vmap_axis_size(a)) refuse_vmap_groups(op, a, g);
}

void check_reduce_groups(const char* op, const std::vector<std::string>& axes,
                         const AxisIndexGroups& g, bool check_vma) {
  if (g.empty()) return;
  check_no_vmap_groups(op, axes, g);
  const std::string name = op;
  if (check_vma)
    throw NotImplementedError("[" + name + "] " + name +
                              " with axis_index_groups is not implemented when vma is checked (" +
                              (name == "psum"
                                   ? std::string("JAX's psum_invariant raises NotImplementedError")
                                   : std::string("the result differs between groups, so it is not "
                                                 "invariant")) +
                              "). Got axis_index_groups=" + groups_str(g) +
                              " inside shard_map(check_vma=true); expected check_vma=false. Use "
                              "shard_map(..., {.check_vma = false}) or pmap, or mask a full " +
                              name + " with axis_index.");
  int64_t n = 1;
  for (const auto& a : axes) n *= bound_axis_size(a);
  check_axis_index_groups(g, n, op, axes);
}

std::vector<std::pair<int, int>> group_positions(const AxisIndexGroups& g, int64_t n) {
  std::vector<std::pair<int, int>> at(static_cast<size_t>(n));
  if (g.empty()) {
    for (int64_t i = 0; i < n; ++i) at[static_cast<size_t>(i)] = {0, static_cast<int>(i)};
    return at;
  }
  for (size_t k = 0; k < g.size(); ++k)
    for (size_t j = 0; j < g[k].size(); ++j)
      at[static_cast<size_t>(g[k][j])] = {static_cast<int>(k), static_cast<int>(j)};
  return at;
}

Collective::Collective(Kind kind, std::vector<std::string> axes, detail::ReduceOp op,
                       bool check_vma, AxisIndexGroups groups)
    : kind_(kind),
      axes_(std::move(axes)),
      op_(op),
      check_vma_(check_vma),
      groups_(std::move(groups)) {
  for (const auto& a : axes_)
    if (vmap_axis_size(a)) vmap_axes_.insert(a);
}

const char* Collective::name() const {
  switch (kind_) {
    case Kind::Psum:
      return op_ == ReduceOp::Max ? "pmax" : op_ == ReduceOp::Min ? "pmin" : "psum";
    case Kind::Pvary:
      return "pvary";
    case Kind::AxisIndex:
      return "axis_index";
  }
  return "collective";
}

std::vector<ArrayType> Collective::infer(const std::vector<ArrayType>& in) const {
  const std::string pre = std::string("[") + name() + "] ";
  check_axes_bound(axes_, name());
  AbstractMesh ctx = get_abstract_mesh();
  std::set<std::string> all(axes_.begin(), axes_.end());
  if (all.size() != axes_.size())
    throw ValueError(pre + "the axis names " + axis_names_tuple(axes_) +
                     " repeat an axis. Got that; expected each axis once.");
  if (op_ != ReduceOp::Sum && !in.empty() && is_complex(in[0].dtype))
    throw NotImplementedError(pre + name() + " of a " + dtype_name(in[0].dtype) +
                              " value is not defined. Got " + in[0].str() +
                              "; expected a real dtype (complex numbers have no order). Reduce "
                              "the real and imaginary parts (tsr::real, tsr::imag) separately.");
  if (!groups_.empty() && kind_ != Kind::Psum)
    throw NotImplementedError(pre + name() + " does not take axis_index_groups. Got " +
                              groups_str(groups_) + "; expected none. Drop them.");
  // Only manual mesh axes are typed; a vmap's axis_name is batched away (§6.2).
  std::vector<std::string> named;
  for (const auto& a : axes_)
    if (!vmap_axes_.count(a)) named.push_back(a);
  std::set<std::string> ax(named.begin(), named.end());
  if (kind_ == Kind::AxisIndex) {
    ArrayType t;
    t.dtype = DType::Int32;
    t.sharding = NamedSharding(ctx, PartitionSpec());
    if (check_vma_) t.vma = ax;
    return {t};
  }
  check_reduce_groups(name(), axes_, groups_, check_vma_);
  ArrayType t = in.at(0);
  if (!check_vma_) {
    t.vma.clear();
    return {t};
  }
  if (kind_ == Kind::Pvary) {
    for (const auto& a : named)
      if (t.munreduced.count(a) || t.mreduced.count(a))
        throw ValueError(pre + "pvary cannot accept args which are " +
                         (t.munreduced.count(a) ? "unreduced" : "reduced") + ". Got " + t.str() +
                         " and axes=" + axis_set_str(ax) +
                         ". psum an unreduced value first; pcast a reduced one to varying.");
    for (const auto& a : named)
      if (t.vma.count(a))
        throw ValueError(pre +
                         "pvary is a invariant->variant collective. This means that the axis "
                         "names mentioned in `axes` passed to `pvary` must not be present in "
                         "`typeof(inp).vma`. Got axes=" +
                         axis_names_tuple(axes_) + " and vma=" + axis_set_str(t.vma) +
                         "; expected axes the input does not vary over.");
    t.vma.insert(ax.begin(), ax.end());
    return {t};
  }
  for (const auto& a : named)
    if (!t.vma.count(a))
      throw ValueError(pre + name() +
                       " is a variant->invariant collective. This means that the axis names "
                       "mentioned in `axes` passed to `" +
                       name() + "` must be present in `typeof(inp).vma`. Got axes=" +
                       axis_names_tuple(axes_) + " and vma=" + axis_set_str(t.vma) +
                       "; expected the input to vary over them (tsr::psum inserts pvary for you).");
  for (const auto& a : named) t.vma.erase(a);
  return {t};
}

std::string Collective::params() const {
  std::string s = "axes=" + axis_names_tuple(axes_);
  return groups_.empty() ? s : s + " axis_index_groups=" + groups_str(groups_);
}

bool Collective::uses_axis_name(const std::string& n) const {
  return std::find(axes_.begin(), axes_.end(), n) != axes_.end();
}

// ---- batching rules (manual-spmd §6.2) ----------------------------------------------
// Over the vmap's own axis_name the collective acts on the batch dimension: psum and
// pmax/pmin reduce it (an unbatched operand is the same on every instance: x * size
// and x), pvary is nothing, axis_index is an iota. Over other axes (mesh axes, an outer
// vmap's name) it acts per element, so the batch dimension stays where it is.
detail::Batched Collective::batch(const std::vector<Array>& args,
                                  const std::vector<int>& dims) const {
  const BatchAxis& b = batch_axis();
  std::vector<std::string> rest;
  for (const auto& a : axes_)
    if (a != b.name) rest.push_back(a);
  auto over_rest = [&](const Array& x) {
    return rest.empty() ? x
                        : bind1(std::make_shared<Collective>(kind_, rest, op_, check_vma_), {x});
  };
  if (rest.size() == axes_.size()) {  // not this vmap's axis
    if (kind_ == Kind::AxisIndex) return {{bind1(shared_from_this(), {})}, {-1}};
    return {{bind1(shared_from_this(), args)}, {dims[0]}};
  }
  if (!groups_.empty()) refuse_vmap_groups(name(), b.name, groups_);
  switch (kind_) {
    case Kind::AxisIndex: {
      if (!rest.empty())
        throw NotImplementedError(
            "[axis_index] axis_index over a vmap axis name together with other axes " +
            axis_names_tuple(axes_) +
            " is not implemented. Got that tuple; expected the vmap's axis alone. Combine "
            "axis_index of each name yourself (row-major).");
      return {{iota({b.size}, int32)}, {0}};
    }
    case Kind::Pvary:
      return {{over_rest(args[0])}, {dims[0]}};
    case Kind::Psum: {
      const Array& x = args[0];
      if (dims[0] < 0)
        return {
            {over_rest(op_ == ReduceOp::Sum ? (x * static_cast<double>(b.size)).astype(x.dtype())
                                            : x)},
            {-1}};
      Array r = op_ == ReduceOp::Sum   ? sum(x, dims[0])
                : op_ == ReduceOp::Max ? max(x, dims[0])
                                       : min(x, dims[0]);
      return {{over_rest(r.astype(x.dtype()))}, {-1}};
    }
  }
  return {{args[0]}, {dims[0]}};
}

// ---- autodiff rules (manual-spmd §5.1) -------------------------------------------------
// psum and pvary are linear and transpose into each other, so the cotangent of an
// invariant value that was pvary'd into a varying computation is the sum over instances.

std::vector<Array> Collective::jvp(const std::vector<Array>& primals,
                                   const std::vector<Array>& tangents, std::vector<Array>&) const {
  if (kind_ == Kind::Psum && op_ != ReduceOp::Sum)
    throw NotImplementedError(std::string("[") + name() + "] Differentiation rule for '" + name() +
                              "' not implemented. Got a jvp (or grad) through " + name() +
                              "; expected a differentiable collective. Wrap its operand in "
                              "stop_gradient, or differentiate a smooth surrogate (psum).");
  return ad::linear_jvp(*this, primals, tangents);
}

std::vector<Array> Collective::transpose(const std::vector<Array>& cts,
                                         const std::vector<LinearIn>&) const {
  // Typed axes (manual ones of a check_vma body): psum (varying -> invariant) and pvary
  // transpose into each other, JAX's psum_invariant_p and pvary_p. Untyped axes (a
  // vmap's axis_name anywhere, every axis without check_vma): psum is JAX's legacy
  // psum_p, its own transpose (§3.8; it keeps its groups), and pvary is no op.
  std::vector<std::string> typed, untyped;
  for (const auto& a : axes_) (check_vma_ && !vmap_axes_.count(a) ? typed : untyped).push_back(a);
  Array ct = cts.at(0);
  auto apply = [&](Kind k, const std::vector<std::string>& axes, bool check, AxisIndexGroups g) {
    ct = bind1(std::make_shared<Collective>(k, axes, ReduceOp::Sum, check, std::move(g)), {ct});
  };
  if (kind_ == Kind::Pvary) {
    if (!typed.empty()) apply(Kind::Psum, typed, true, {});
    return {ct};
  }
  if (!untyped.empty()) apply(Kind::Psum, untyped, check_vma_, groups_);
  if (!typed.empty()) apply(Kind::Pvary, typed, true, {});
  return {ct};
}

}  // namespace tsr::prim

namespace tsr::detail {

bool vma_differs(const std::vector<Array>& in) {
  const std::set<std::string>* first = nullptr;
  for (const auto& x : in) {
    if (!x.valid()) continue;
    const auto& v = x.type().vma;
    if (!first)
      first = &v;
    else if (v != *first)
      return true;
  }
  return false;
}

std::vector<Array> auto_pvary(const std::vector<Array>& in) {
  std::set<std::string> all;
  for (const auto& x : in)
    if (x.valid()) all.insert(x.type().vma.begin(), x.type().vma.end());
  AbstractMesh ctx = get_abstract_mesh();
  std::vector<Array> out;
  for (const auto& x : in) {
    if (!x.valid() || x.type().vma == all) {
      out.push_back(x);
      continue;
    }
    std::vector<std::string> missing;  // in mesh order
    for (const auto& a : ctx.axis_names())
      if (all.count(a) && !x.type().vma.count(a)) missing.push_back(a);
    // A value reduced over exactly those axes becomes varying by its own cast (§3.4).
    if (!x.type().mreduced.empty() &&
        x.type().mreduced == std::set<std::string>(missing.begin(), missing.end())) {
      out.push_back(prim::manual_cast(prim::ManualCast::Cast::ReducedToVarying, x, missing));
      continue;
    }
    out.push_back(bind1(std::make_shared<prim::Collective>(prim::Collective::Kind::Pvary, missing,
                                                           ReduceOp::Sum, true),
                        {x}));
  }
  return out;
}

}  // namespace tsr::detail
