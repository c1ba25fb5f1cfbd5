#include "tsr/prims/collectives.h"

#include <set>

#include "tsr/error.h"
#include "tsr/prims/common.h"
#include "tsr/transforms/ad_rules.h"

namespace tsr::detail {
namespace {
thread_local bool t_check_vma = true;
}  // namespace

bool current_check_vma() { return t_check_vma; }
CheckVmaScope::CheckVmaScope(bool v) : prev(t_check_vma) { t_check_vma = v; }
CheckVmaScope::~CheckVmaScope() { t_check_vma = prev; }

void check_axes_bound(const std::vector<std::string>& axes, const char* op) {
  AbstractMesh ctx = get_abstract_mesh();
  for (const auto& a : axes)
    if (ctx.empty() || ctx.axis_index(a) < 0 || ctx.axis_type(a) != AxisType::Manual)
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
  std::set<std::string> ax(axes_.begin(), axes_.end());
  if (ax.size() != axes_.size())
    throw ValueError(pre + "the axis names " + axis_names_tuple(axes_) +
                     " repeat an axis. Got that; expected each axis once.");
  if (kind_ == Kind::AxisIndex) {
    ArrayType t;
    t.dtype = DType::Int32;
    t.sharding = NamedSharding(ctx, PartitionSpec());
    if (check_vma_) t.vma = ax;
    return {t};
  }
  ArrayType t = in.at(0);
  if (!check_vma_) {
    t.vma.clear();
    return {t};
  }
  if (kind_ == Kind::Pvary) {
    for (const auto& a : axes_)
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
  for (const auto& a : axes_)
    if (!t.vma.count(a))
      throw ValueError(pre + name() +
                       " is a variant->invariant collective. This means that the axis names "
                       "mentioned in `axes` passed to `" +
                       name() + "` must be present in `typeof(inp).vma`. Got axes=" +
                       axis_names_tuple(axes_) + " and vma=" + axis_set_str(t.vma) +
                       "; expected the input to vary over them (tsr::psum inserts pvary for you).");
  for (const auto& a : axes_) t.vma.erase(a);
  return {t};
}

std::string Collective::params() const { return "axes=" + axis_names_tuple(axes_); }

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
  // check_vma: psum (varying -> invariant) transposes to the free pvary and back;
  // without it psum is the legacy self-transposing all-reduce (§3.8) and pvary is
  // never bound.
  Kind k = kind_ == Kind::Psum && check_vma_ ? Kind::Pvary : Kind::Psum;
  return {bind1(std::make_shared<Collective>(k, axes_, ReduceOp::Sum, check_vma_), {cts.at(0)})};
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
    out.push_back(bind1(std::make_shared<prim::Collective>(prim::Collective::Kind::Pvary, missing,
                                                           ReduceOp::Sum, true),
                        {x}));
  }
  return out;
}

}  // namespace tsr::detail
