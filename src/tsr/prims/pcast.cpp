// pcast's casts and unreduced_psum (manual-spmd §3.5, §3.6), and the rule for
// operands unreduced / reduced over manual axes (sharding §9's rules, as JAX applies
// them inside shard_map). The casts move no data: the lowering aliases the buffer.
#include "tsr/prims/pcast.h"

#include <algorithm>

#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("preduced") && register_primitive("vary_unreduced_cast") &&
    register_primitive("reduced_vary_cast") && register_primitive("unreduced_psum") &&
    declare_ad("preduced", AdKind::Linear) && declare_ad("vary_unreduced_cast", AdKind::Linear) &&
    declare_ad("reduced_vary_cast", AdKind::Linear) && declare_ad("unreduced_psum", AdKind::Linear);

bool subset(const std::vector<std::string>& a, const std::set<std::string>& s) {
  return std::all_of(a.begin(), a.end(), [&](const std::string& x) { return s.count(x) > 0; });
}

}  // namespace

const char* ManualCast::name() const {
  switch (cast_) {
    case Cast::InvariantToReduced:
      return "preduced";
    case Cast::VaryingToUnreduced:
      return "vary_unreduced_cast";
    case Cast::ReducedToVarying:
      return "reduced_vary_cast";
  }
  return "pcast";
}

std::vector<ArrayType> ManualCast::infer(const std::vector<ArrayType>& in) const {
  check_axes_bound(axes(), name());
  ArrayType t = in.at(0);
  const std::string pre = std::string("[") + name() + "] ";
  auto refuse = [&](const char* want) {
    throw ValueError(pre + name() + " needs an operand " + want + " over " +
                     axis_names_tuple(axes()) + ". Got " + t.str() +
                     "; expected that state. Use tsr::pcast, which picks the cast.");
  };
  switch (cast_) {
    case Cast::InvariantToReduced:
      for (const auto& a : axes())
        if (t.vma.count(a) || t.munreduced.count(a) || t.mreduced.count(a)) refuse("invariant");
      for (const auto& a : axes()) t.mreduced.insert(a);
      break;
    case Cast::VaryingToUnreduced:
      if (!subset(axes(), t.vma)) refuse("varying");
      for (const auto& a : axes()) t.vma.erase(a), t.munreduced.insert(a);
      break;
    case Cast::ReducedToVarying:
      if (!subset(axes(), t.mreduced)) refuse("reduced");
      for (const auto& a : axes()) t.mreduced.erase(a), t.vma.insert(a);
      break;
  }
  return {t};
}

std::vector<Array> ManualCast::jvp(const std::vector<Array>& primals,
                                   const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}

// Cotangents swap unreduced and reduced (spec §9): each cast transposes into the one
// going back between the cotangent states.
std::vector<Array> ManualCast::transpose(const std::vector<Array>& cts,
                                         const std::vector<LinearIn>&) const {
  const Array& ct = cts.at(0);
  switch (cast_) {
    case Cast::InvariantToReduced:  // ct unreduced -> invariant
      return {unreduced_psum(ct, axes())};
    case Cast::VaryingToUnreduced:  // ct reduced -> varying
      return {manual_cast(Cast::ReducedToVarying, ct, axes())};
    case Cast::ReducedToVarying:  // ct varying -> unreduced
      return {manual_cast(Cast::VaryingToUnreduced, ct, axes())};
  }
  return {ct};
}

// Over mesh axes, a cast applies to each example: the batch dimension stays.
Batched ManualCast::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return {{bind1(shared_from_this(), args)}, {dims[0]}};
}

std::vector<ArrayType> UnreducedPsum::infer(const std::vector<ArrayType>& in) const {
  check_axes_bound(axes(), name());
  ArrayType t = in.at(0);
  if (!subset(axes(), t.munreduced))
    throw ValueError("[unreduced_psum] unreduced_psum needs an operand unreduced over " +
                     axis_names_tuple(axes()) + ". Got " + t.str() +
                     "; expected those axes unreduced. Use tsr::psum, which picks the rule.");
  for (const auto& a : axes()) t.munreduced.erase(a);
  return {t};
}

std::vector<Array> UnreducedPsum::jvp(const std::vector<Array>& primals,
                                      const std::vector<Array>& tangents,
                                      std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}

std::vector<Array> UnreducedPsum::transpose(const std::vector<Array>& cts,
                                            const std::vector<LinearIn>&) const {
  return {manual_cast(ManualCast::Cast::InvariantToReduced, cts.at(0), axes())};
}

Batched UnreducedPsum::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return {{bind1(shared_from_this(), args)}, {dims[0]}};
}

Array manual_cast(ManualCast::Cast cast, const Array& x, const std::vector<std::string>& axes) {
  return bind1(std::make_shared<ManualCast>(cast, axes), {x});
}

Array unreduced_psum(const Array& x, const std::vector<std::string>& axes) {
  return bind1(std::make_shared<UnreducedPsum>(axes), {x});
}

// ---- ordinary primitives with operands unreduced / reduced over manual axes -----------

namespace {

// Primitives linear in operand 0 whose other operands are parameters: an unreduced
// operand 0 stays unreduced (each device applies the op to its partial value).
bool linear_in_first(const std::string& n) {
  static const char* const kNames[] = {
      "reshape",    "transpose", "squeeze", "broadcast_in_dim",
      "reduce_sum", "slice",     "rev",     "convert_element_type"};
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* k) { return n == k; });
}

std::string sets_str(const std::set<std::string>& s) { return axis_set_str(s); }

}  // namespace

void manual_unreduced_rule(const Primitive& prim, const std::vector<ArrayType>& in,
                           std::vector<ArrayType>& out) {
  const std::string n = prim.name();
  const std::string pre = "[" + n + "] ";
  std::set<std::string> u, r;  // the results' sets
  // Unreduced operands (sharding §9's ur rules).
  std::vector<size_t> un;
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].munreduced.empty()) un.push_back(i);
  bool reduced_consumed = false;
  if (!un.empty()) {
    const ArrayType& a = in[un[0]];
    if (n == "add" || n == "sub") {
      if (un.size() == 1) {
        const bool lhs = un[0] == 0;
        throw ShardingTypeError(pre + (lhs ? "lhs" : "rhs") + " is unreduced while " +
                                (lhs ? "rhs" : "lhs") + " is not. `" + n +
                                "` operation does not allow this because there will be implicit "
                                "communication. Please reduce " +
                                (lhs ? "lhs" : "rhs") + " via `tsr::psum` before calling `" + n +
                                "`. Got " + in[0].str() + " and " + in[1].str() + ".");
      }
      if (in[0].munreduced != in[1].munreduced)
        throw ShardingTypeError(pre + "lhs and rhs to `" + n +
                                "` must be unreduced along the same mesh axes. Got lhs=" +
                                sets_str(in[0].munreduced) + ", rhs=" + sets_str(in[1].munreduced) +
                                ". Psum one of them over the others' axes first.");
      u = a.munreduced;
    } else if (n == "mul") {
      if (un.size() == 2)
        throw ShardingTypeError(pre +
                                "lhs and rhs to `mul` cannot be unreduced since mul is "
                                "bilinear. Got lhs=" +
                                in[0].str() + " and rhs=" + in[1].str() +
                                ". Psum one factor first.");
      const size_t o = un[0] == 0 ? 1 : 0;
      if (in[o].mreduced != a.munreduced) {
        const bool lhs = un[0] == 0;
        throw ShardingTypeError(
            pre + (lhs ? "RHS" : "LHS") + " should be reduced along the same axes " +
            (lhs ? "LHS" : "RHS") + " is unreduced on. Got lhs=" + in[0].str() +
            " and rhs=" + in[1].str() + ". pcast the other factor to Reduced over " +
            sets_str(a.munreduced) + ", or psum this one first.");
      }
      u = a.munreduced;
      reduced_consumed = true;
    } else if (n == "dot_general") {
      throw ShardingTypeError(
          pre + "lhs or rhs passed to dot_general cannot be unreduced. Got lhs=" + in[0].str() +
          " and rhs=" + in[1].str() + ". Psum the unreduced operand first.");
    } else if (linear_in_first(n) && un.size() == 1 && un[0] == 0) {
      if (n == "convert_element_type" && !(is_floating(in[0].dtype) && is_floating(out[0].dtype)))
        throw ShardingTypeError(pre + "an unreduced value cannot be converted from " +
                                dtype_name(in[0].dtype) + " to " + dtype_name(out[0].dtype) +
                                ": the converted partials do not combine to the converted value. "
                                "Got " +
                                in[0].str() +
                                "; expected a float -> float conversion. Psum first.");
      u = a.munreduced;
    } else {
      throw NotImplementedError(pre + "unreduced rule for " + n +
                                " is not implemented. Got an operand of type " + a.str() +
                                ", unreduced over manual axes " + sets_str(a.munreduced) +
                                "; expected add, sub, mul by a reduced value, or a reshaping "
                                "op. Apply tsr::psum over those axes first.");
    }
  }
  // Reduced operands: one reduced set, and no operand replicated over it.
  if (!reduced_consumed) {
    const ArrayType* first = nullptr;
    for (const auto& t : in)
      if (!t.mreduced.empty()) {
        if (first && t.mreduced != first->mreduced)
          throw ShardingTypeError(pre +
                                  "All inputs should be reduced across the same mesh axes. "
                                  "Got specs: " +
                                  first->str() + ", " + t.str() +
                                  ". pcast them to one reduced set first.");
        first = &t;
      }
    if (first) {
      for (const auto& t : in)
        if (t.mreduced.empty())
          throw ShardingTypeError(
              pre +
              "Inputs cannot be replicated on the same axes that another input is "
              "reduced on. Got input type: " +
              t.str() + " and reduced spec: " + sets_str(first->mreduced) +
              ". pcast the reduced input to Varying (or the other to Reduced) first.");
      r = first->mreduced;
    }
  }
  for (auto& t : out) {
    t.munreduced = u;
    t.mreduced = r;
  }
}

}  // namespace tsr::prim

namespace tsr {

Array pcast(const Array& x, const AxisNames& axes, PcastTo to) {
  using Cast = prim::ManualCast::Cast;
  const char* to_s = to == PcastTo::Varying     ? "varying"
                     : to == PcastTo::Unreduced ? "unreduced"
                                                : "reduced";
  if (axes.names.empty()) return x;
  detail::check_axes_bound(axes.names, "pcast");
  if (!detail::current_check_vma()) return x;  // §3.8: the casts are no-ops
  std::vector<std::string> mesh_axes;
  for (const auto& a : axes.names)
    if (!detail::vmap_axis_size(a)) mesh_axes.push_back(a);
  if (mesh_axes.size() != axes.names.size()) {
    if (to == PcastTo::Varying) return pvary(x, axes);
    throw NotImplementedError(std::string("[pcast] pcast to ") + to_s +
                              " over a vmap's axis_name is not implemented. Got axes " +
                              prim::axis_names_tuple(axes.names) +
                              "; expected manual mesh axes. Cast over the shard_map's axes.");
  }
  const ArrayType& t = x.type();
  std::set<std::string> states;
  for (const auto& a : mesh_axes)
    states.insert(t.vma.count(a)          ? "varying"
                  : t.munreduced.count(a) ? "unreduced"
                  : t.mreduced.count(a)   ? "reduced"
                                          : "invarying");
  if (states.size() > 1) {
    std::string st;
    for (const auto& s : states) st += (st.empty() ? "'" : ", '") + s + "'";
    throw ValueError(
        "[pcast] tsr::pcast can only accept axis names which correspond to one of varying, "
        "unreduced, reduced or invarying state of the input. Got input type: " +
        t.str() + ", axes: " + prim::axis_names_tuple(mesh_axes) + " and input state: {" + st +
        "}. Cast the axes of each state separately.");
  }
  const std::string from = *states.begin();
  if (from == "invarying" && to == PcastTo::Varying) return pvary(x, mesh_axes);
  if (from == "invarying" && to == PcastTo::Reduced)
    return prim::manual_cast(Cast::InvariantToReduced, x, mesh_axes);
  if (from == "varying" && to == PcastTo::Unreduced)
    return prim::manual_cast(Cast::VaryingToUnreduced, x, mesh_axes);
  if (from == "reduced" && to == PcastTo::Varying)
    return prim::manual_cast(Cast::ReducedToVarying, x, mesh_axes);
  throw ValueError("[pcast] Unsupported pcast from=" + from + ", to='" + to_s + "'. Got " +
                   t.str() + " over " + prim::axis_names_tuple(mesh_axes) +
                   "; expected one of invarying -> varying, invarying -> reduced, varying -> "
                   "unreduced, reduced -> varying. (An unreduced value becomes invariant with "
                   "tsr::psum.)");
}

namespace detail {

std::optional<Array> psum_of_unreduced(const Array& x, const std::vector<std::string>& axes) {
  const std::set<std::string>& u = x.type().munreduced;
  if (u.empty()) return std::nullopt;
  std::vector<std::string> in_u;
  for (const auto& a : axes)
    if (u.count(a)) in_u.push_back(a);
  if (in_u.empty()) return std::nullopt;
  if (in_u.size() != axes.size())
    throw ValueError("[psum] psum over " + prim::axis_names_tuple(axes) + " of " + x.type().str() +
                     ", which is unreduced over some of the axes only. Got that; expected all "
                     "of them unreduced, or none. Psum the unreduced axes and the others in two "
                     "calls.");
  return prim::unreduced_psum(x, axes);
}

}  // namespace detail
}  // namespace tsr
