// Helpers shared by the jvp and transpose rules of every primitive family.
#include "tsr/transforms/ad_rules.h"

#include "tsr/core/array_impl.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/common.h"
#include "tsr/prims/creation.h"
#include "tsr/prims/elementwise.h"
#include "tsr/prims/pcast.h"
#include "tsr/prims/reduction.h"
#include "tsr/prims/shape_ops.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/transforms/ad.h"

namespace tsr::detail {

prim::Placed placed_like(const ArrayType& t, const Array& like) {
  prim::Placed where;
  where.sharding = t.sharding;
  // Eagerly the value needs devices: like's when it lives on the type's mesh, else
  // the context mesh's.
  if (!current_trace()) {
    if (like.valid() && !like.impl()->var && like.sharding().concrete_mesh() &&
        like.sharding().mesh() == t.sharding.mesh()) {
      where.mesh = *like.sharding().concrete_mesh();
    } else {
      Mesh ctx = get_mesh();
      if (!ctx.empty() && ctx.abstract_mesh() == t.sharding.mesh()) where.mesh = ctx;
    }
  }
  if (t.sharding.mesh().empty()) where.sharding.reset();
  return where;
}

Array zeros_of(const ArrayType& t, const Array& like) {
  Array z =
      bind1(std::make_shared<prim::Full>(t.shape, t.dtype, 0.0, t.weak, placed_like(t, like)), {});
  return t.sharding.mesh().empty() ? z : ad::coerce(z, t, "zeros", "value");
}

}  // namespace tsr::detail

namespace tsr::detail::ad {

namespace {

bool replicated(const ArrayType& t) {
  const PartitionSpec& s = t.sharding.spec();
  return s.partition_axes().empty() && s.unreduced().empty() && s.reduced().empty();
}

bool same_sharding(const ArrayType& a, const ArrayType& b) {
  // A value off-mesh (one device, no mesh) matches any fully replicated layout.
  if (a.sharding.mesh().empty() || b.sharding.mesh().empty()) return replicated(a) && replicated(b);
  if (!(a.sharding.mesh() == b.sharding.mesh())) return false;
  return a.sharding.normalized(a.ndim()).spec() == b.sharding.normalized(b.ndim()).spec();
}

Array bin(prim::BinaryOp op, const Array& a, const Array& b) {
  return bind1(std::make_shared<prim::Binary>(op), {a, b});
}

// x typed as varying over exactly `vma`: a pvary of the axes it lacks; more axes than
// `vma` is a bug in the rule of `rule`.
Array with_vma(const Array& x, const std::set<std::string>& vma, const char* rule,
               const char* what) {
  const std::set<std::string>& have = x.type().vma;
  if (have == vma) return x;
  for (const auto& a : have)
    if (!vma.count(a))
      throw TypeError(std::string("[") + what + "] the rule of '" + rule + "' produced a " + what +
                      " of type " + x.type().str() + " that varies over manual axis '" + a +
                      "'. Got more varying axes than the value's; expected " +
                      prim::axis_set_str(vma) +
                      ". This is a bug in Tessera's rule: please report it.");
  // A zero (or a value made by an invariant op) for a varying value: pvary it, as JAX
  // gives zeros of a varying type (manual-spmd §5.1: tangent type = primal type).
  std::vector<std::string> add;  // in mesh order
  for (const auto& a : get_abstract_mesh().axis_names())
    if (vma.count(a) && !have.count(a)) add.push_back(a);
  return bind1(
      std::make_shared<prim::Collective>(prim::Collective::Kind::Pvary, add, ReduceOp::Sum, true),
      {x});
}

// x (invariant over them: a zero, or a value an invariant op made) typed unreduced /
// reduced over the manual axes `want` is (pcast's states, §3.6).
Array with_manual_sets(const Array& x, const ArrayType& want) {
  const ArrayType& t = x.type();
  if (t.munreduced == want.munreduced && t.mreduced == want.mreduced) return x;
  if (!t.munreduced.empty() || !t.mreduced.empty())
    throw TypeError("[cotangent] a rule produced " + t.str() + " for a value of type " +
                    want.str() +
                    ". Got other unreduced / reduced manual axes; expected equal ones. This is a "
                    "bug in Tessera's rule: please report it.");
  Array y = x;
  if (!want.mreduced.empty())
    y = prim::manual_cast(prim::ManualCast::Cast::InvariantToReduced, y,
                          {want.mreduced.begin(), want.mreduced.end()});
  if (!want.munreduced.empty()) {
    std::vector<std::string> u(want.munreduced.begin(), want.munreduced.end());
    y = prim::manual_cast(prim::ManualCast::Cast::VaryingToUnreduced,
                          bind1(std::make_shared<prim::Collective>(prim::Collective::Kind::Pvary, u,
                                                                   ReduceOp::Sum, true),
                                {y}),
                          u);
  }
  return y;
}

}  // namespace

std::string mismatch(const ArrayType& want, const ArrayType& got) {
  std::vector<std::string> m;
  if (want.dtype != got.dtype) m.push_back("the dtypes do not match");
  if (want.shape != got.shape) m.push_back("the shapes do not match");
  if (want.shape == got.shape && !same_sharding(want, got))
    m.push_back("the shardings do not match");
  if (want.vma != got.vma) m.push_back("the manual axis types do not match");
  if (m.empty()) return "";
  std::string s = ", so ";
  for (size_t i = 0; i < m.size(); ++i)
    s += (i == 0 ? "" : i + 1 == m.size() ? ", and " : ", ") + m[i];
  return s;
}

std::string types_str(const std::vector<ArrayType>& ts) {
  std::string s = "[";
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return s + "]";
}

Array first_valid(const std::vector<Array>& xs) {
  for (const auto& x : xs)
    if (x.valid()) return x;
  return {};
}

Array instantiate(const Array& t, const ArrayType& type, const Array& like) {
  return t.valid() ? t : zeros_of(type, like);
}

Array add(const Array& a, const Array& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return bin(prim::BinaryOp::Add, a, b);
}

Array sub(const Array& a, const Array& b) {
  if (!b.valid()) return a;
  if (!a.valid()) return negate(b);
  return bin(prim::BinaryOp::Sub, a, b);
}

Array negate(const Array& t) {
  if (!t.valid()) return t;
  return bind1(std::make_shared<prim::Unary>(prim::UnaryOp::Neg), {t});
}

Array scale(const Array& t, const Array& f) {
  if (!t.valid()) return t;
  Array g = f;
  if (g.dtype() != t.dtype() || g.type().weak != t.type().weak)
    g = convert_element_type(g, t.dtype(), {.weak = t.type().weak});
  return bin(prim::BinaryOp::Mul, t, g);
}

Array coerce(const Array& x, const ArrayType& want, const char* prim, const char* what) {
  const ArrayType& have = x.type();
  if (have.shape != want.shape)
    throw TypeError(std::string("[") + what + "] the " + (what[0] == 'c' ? "transpose" : "jvp") +
                    " rule of '" + prim + "' produced a " + what + " of type " + have.str() +
                    " for a value of type " + want.str() +
                    ". Got mismatched shapes; expected equal ones. This is a bug in Tessera's "
                    "rule: please report it.");
  Array y = x;
  if (have.dtype != want.dtype || have.weak != want.weak)
    y = bind1(std::make_shared<prim::Convert>(want.dtype, want.weak), {y});
  if (!same_sharding(y.type(), want)) {
    if (y.type().sharding.mesh().empty()) return y;
    if (want.sharding.mesh().empty()) {
      // Off-mesh values are replicated: replicate on the value's own mesh.
      const ArrayType& t = y.type();
      return bind1(
          std::make_shared<prim::Reshard>(
              NamedSharding(t.sharding.mesh(), PartitionSpec()).normalized(t.ndim()), std::nullopt),
          {y});
    }
    y = bind1(std::make_shared<prim::Reshard>(want.sharding.normalized(want.ndim()), std::nullopt),
              {y});
  }
  return with_manual_sets(with_vma(y, want.vma, prim, what), want);
}

Array sum_to(const Array& ct, const std::vector<int>& axes, const ArrayType& want) {
  Array r = ct;
  if (!axes.empty()) {
    // A sum typed like the wanted cotangent: out_sharding carries its sharding
    // (unreduced sets included), so the partitioner adds exactly the reduction needed.
    // `want` is either the reduced shape or ct's shape with size-1 dims (keepdims).
    std::optional<NamedSharding> os;
    if (!want.sharding.mesh().empty()) {
      std::vector<PartitionEntry> we = entries_of(want), kept;
      bool keepdims = want.ndim() == ct.ndim();
      for (int d = 0; d < want.ndim(); ++d)
        if (!keepdims || std::find(axes.begin(), axes.end(), d) == axes.end())
          kept.push_back(we[d]);
      if (static_cast<int>(kept.size() + axes.size()) == ct.ndim())
        os = NamedSharding(want.sharding.mesh(), with_sets_of(kept, want.sharding.spec()));
    }
    try {
      r = bind1(std::make_shared<prim::Reduce>(prim::ReduceKind::Sum, axes, os), {ct});
    } catch (const Error&) {
      r = bind1(std::make_shared<prim::Reduce>(prim::ReduceKind::Sum, axes, std::nullopt), {ct});
    }
  }
  if (r.shape() != want.shape)
    r = bind1(std::make_shared<prim::Reshape>(want.shape, std::nullopt), {r});
  return coerce(r, want, "reduce_sum", "cotangent");
}

Array broadcast_to_type(const Array& x, const ArrayType& want, const std::vector<int>& dims) {
  std::optional<NamedSharding> os;
  if (!want.sharding.mesh().empty())
    os = NamedSharding(want.sharding.mesh(), want.sharding.normalized(want.ndim()).spec());
  Array r;
  try {
    r = bind1(std::make_shared<prim::BroadcastInDim>(want.shape, dims, os), {x});
  } catch (const Error&) {
    r = bind1(std::make_shared<prim::BroadcastInDim>(want.shape, dims, std::nullopt), {x});
  }
  return coerce(r, want, "broadcast_in_dim", "cotangent");
}

Array unbroadcast(const Array& ct, const ArrayType& operand) {
  ArrayType want = ct_type(operand);
  want.dtype = ct.dtype();
  want.weak = ct.type().weak;
  if (ct.shape() == operand.shape) return coerce(ct, ct_type(operand), "unbroadcast", "cotangent");
  std::vector<int> axes;
  if (operand.ndim() == 0) {
    for (int d = 0; d < ct.ndim(); ++d) axes.push_back(d);
  } else {
    for (int d = 0; d < ct.ndim(); ++d)
      if (operand.shape[d] == 1 && ct.shape()[d] != 1) axes.push_back(d);
  }
  return coerce(sum_to(ct, axes, want), ct_type(operand), "unbroadcast", "cotangent");
}

std::vector<Array> rebind(const Primitive& p, const std::vector<Array>& in) {
  return detail::bind(p.shared_from_this(), in);
}

std::vector<Array> linear_jvp(const Primitive& p, const std::vector<Array>& primals,
                              const std::vector<Array>& tangents) {
  std::vector<Array> t(tangents.size());
  Array like = first_valid(tangents);
  for (size_t i = 0; i < t.size(); ++i) t[i] = instantiate(tangents[i], primals[i].type(), like);
  return rebind(p, t);
}

std::vector<Array> bilinear_jvp(const Primitive& p, const std::vector<Array>& primals,
                                const std::vector<Array>& tangents) {
  const Array &x = primals[0], &y = primals[1], &tx = tangents[0], &ty = tangents[1];
  return {add(tx.valid() ? rebind(p, {tx, y})[0] : Array(),
              ty.valid() ? rebind(p, {x, ty})[0] : Array())};
}

void check_bilinear_transpose(const Primitive& p, const std::vector<LinearIn>& ins,
                              const char* what) {
  if (ins[0].linear() && ins[1].linear())
    throw NotImplementedError(std::string("[transpose] both operands of '") + p.name() +
                              "' depend on the linear inputs, so the function is not linear in "
                              "them. Got " +
                              what +
                              " of two linear values; expected one operand that does not depend "
                              "on the inputs.");
}

Array or_replicated(const std::function<Array(const Array&)>& f, const Array& x) {
  try {
    return f(x);
  } catch (const ShardingTypeError&) {
  } catch (const ValueError&) {  // a result type that does not divide (E23)
  }
  const ArrayType& t = x.type();
  PartitionSpec rep({}, t.sharding.spec().unreduced(), t.sharding.spec().reduced(),
                    t.sharding.spec().unreduced_kind());
  return f(bind1(
      std::make_shared<prim::Reshard>(NamedSharding(t.sharding.mesh(), rep), std::nullopt), {x}));
}

Array zeros_shaped(const Shape& shape, const Array& like) {
  ArrayType t = like.type();
  t.shape = shape;
  try {
    t.sharding.normalized(t.ndim()).shard_shape(shape);
  } catch (const Error&) {
    const PartitionSpec& s = t.sharding.spec();
    t.sharding =
        t.sharding.with_spec(PartitionSpec({}, s.unreduced(), s.reduced(), s.unreduced_kind()));
  }
  return zeros_of(t, like);
}

Array zeros_ct(const LinearIn& in, const Array& like) { return zeros_of(ct_type(in.type), like); }

}  // namespace tsr::detail::ad
