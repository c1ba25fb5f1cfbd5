// Rules of the elementwise primitives (spec §12.2–§12.5, §9 ur rules).
#include "tsr/prims/elementwise.h"

#include <cmath>
#include <optional>
#include <set>

#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/sharding/format.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {

const char* const kUnaryNames[kNumUnaryOps] = {
    "neg", "abs",   "sign",     "floor", "ceil",      "round",  "exp",    "exp2",
    "log", "log1p", "expm1",    "sqrt",  "rsqrt",     "square", "sin",    "cos",
    "tan", "tanh",  "logistic", "erf",   "is_finite", "not",    "erf_inv"};
const char* const kBinaryNames[kNumBinaryOps] = {"add", "sub", "mul",   "div", "rem", "pow",
                                                 "max", "min", "atan2", "and", "or",  "xor",
                                                 "eq",  "ne",  "lt",    "le",  "gt",  "ge"};

bool register_all() {
  for (const char* n : kUnaryNames) register_primitive(n);
  for (const char* n : kBinaryNames) register_primitive(n);
  for (const char* n : {"integer_pow", "select_n", "clamp", "convert_element_type"})
    register_primitive(n);
  // Autodiff kinds (see each rule below).
  for (const char* n : {"neg", "add", "sub", "mul", "div", "select_n", "convert_element_type"})
    declare_ad(n, AdKind::Linear);
  for (const char* n : {"abs",         "exp", "exp2", "log", "log1p", "expm1",    "sqrt", "rsqrt",
                        "square",      "sin", "cos",  "tan", "tanh",  "logistic", "erf",  "erf_inv",
                        "integer_pow", "rem", "pow",  "max", "min",   "atan2",    "clamp"})
    declare_ad(n, AdKind::Differentiable);
  for (const char* n : {"sign", "floor", "ceil", "round"})
    declare_ad(n, AdKind::NonDifferentiable,
               "a step function: its derivative is zero almost "
               "everywhere (JAX: defjvp_zero)");
  for (const char* n : {"is_finite", "not", "and", "or", "xor", "eq", "ne", "lt", "le", "gt", "ge"})
    declare_ad(n, AdKind::NonDifferentiable, "bool or integer results have no tangent space");
  return true;
}
const bool registered = register_all();

// The dtype classes lax accepts per unary op (lax.py's standard_unop calls):
// numbers for neg/sign, signed ints, floats and complex for abs, numbers for square,
// bool and ints for not, floats and complex for the transcendental functions, floats
// for the rest. jnp front-ends handle the other dtypes themselves (abs of uint is the
// identity, square of bool is int).
enum DClass : unsigned { kBoolC = 1, kSignedC = 2, kUnsignedC = 4, kFloatC = 8, kComplexC = 16 };

unsigned accepted(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Sign:
    case UnaryOp::Square:
      return kSignedC | kUnsignedC | kFloatC | kComplexC;
    case UnaryOp::Abs:
      return kSignedC | kFloatC | kComplexC;
    case UnaryOp::Not:
      return kBoolC | kSignedC | kUnsignedC;
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::IsFinite:
    case UnaryOp::Erf:
    case UnaryOp::ErfInv:
      return kFloatC;
    default:
      return kFloatC | kComplexC;
  }
}

unsigned class_of(DType t) {
  if (t == DType::Bool) return kBoolC;
  if (is_floating(t)) return kFloatC;
  if (is_complex(t)) return kComplexC;
  return is_unsigned(t) ? kUnsignedC : kSignedC;
}

std::string class_names(unsigned c) {
  std::string s;
  auto add = [&](unsigned bit, const char* n) {
    if (c & bit) s += (s.empty() ? "" : ", ") + std::string(n);
  };
  add(kBoolC, "bool");
  add(kSignedC, "signedinteger");
  add(kUnsignedC, "unsignedinteger");
  add(kFloatC, "floating");
  add(kComplexC, "complexfloating");
  return s;
}

ArrayType same_as(const ArrayType& x, DType dtype, bool weak) {
  ArrayType t = x;
  t.dtype = dtype;
  t.weak = weak;
  return t;
}

}  // namespace
}  // namespace tsr::prim

namespace tsr::detail {
// Spec §12.4 broadcasting_sharding_rule on same-rank operands.
std::vector<PartitionEntry> broadcast_entries(const char* name, const std::vector<ArrayType>& in,
                                              Shape& out_shape) {
  int rank = -1;
  for (const auto& t : in)
    if (t.ndim() > 0) {
      if (rank >= 0 && t.ndim() != rank) {
        std::string shapes;
        for (size_t i = 0; i < in.size(); ++i) shapes += (i ? ", " : "") + shape_str(in[i].shape);
        throw TypeError(std::string("[") + name + "] " + name +
                        ": arrays must have same number of dimensions, got " + shapes +
                        ". Reshape or expand_dims the operands to one rank (the tsr:: ops do "
                        "this for you).");
      }
      rank = t.ndim();
    }
  if (rank < 0) {
    out_shape = {};
    return {};
  }
  out_shape.assign(static_cast<size_t>(rank), 1);
  for (const auto& t : in) {
    if (t.ndim() == 0) continue;
    for (int d = 0; d < rank; ++d) {
      int64_t n = t.shape[d];
      if (n == out_shape[d] || n == 1) continue;
      if (out_shape[d] != 1) {
        std::string shapes;
        for (size_t i = 0; i < in.size(); ++i) shapes += (i ? ", " : "") + shape_str(in[i].shape);
        throw TypeError(std::string("[") + name + "] " + name +
                        " got incompatible shapes for broadcasting: " + shapes + ". Got sizes " +
                        std::to_string(out_shape[d]) + " and " + std::to_string(n) +
                        " in dimension " + std::to_string(d) + "; expected equal sizes or 1.");
      }
      out_shape[d] = n;
    }
  }
  std::vector<PartitionEntry> out(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    std::vector<const PartitionEntry*> es;
    std::vector<int64_t> ns;
    for (const auto& t : in)
      if (t.ndim() > 0) {
        es.push_back(nullptr);
        ns.push_back(t.shape[d]);
      }
    std::vector<PartitionEntry> all;
    for (const auto& t : in)
      if (t.ndim() > 0) all.push_back(entries_of(t)[d]);
    bool same = true;
    for (const auto& e : all) same = same && e == all[0];
    if (same) {
      out[d] = all[0];
      continue;
    }
    std::vector<PartitionEntry> rest;
    for (size_t i = 0; i < all.size(); ++i)
      if (!(ns[i] == 1 && all[i].is_none())) rest.push_back(all[i]);
    const PartitionEntry* pick = nullptr;
    bool conflict = false;
    for (const auto& e : rest) {
      if (e.is_none()) continue;
      if (pick && !(*pick == e)) conflict = true;
      if (!pick) pick = &e;
    }
    if (conflict) {
      std::string specs;
      bool first = true;
      for (const auto& t : in) {
        if (t.ndim() == 0) continue;
        specs += (first ? "" : ", ") + entries_tuple(entries_of(t));
        first = false;
      }
      throw ShardingTypeError(std::string("[") + name + "] " + name +
                              " got incompatible shardings for broadcasting: " + specs +
                              ". Reshard the operands to one sharding first.");
    }
    out[d] = pick ? *pick : PartitionEntry();
  }
  return out;
}

}  // namespace tsr::detail

namespace tsr::prim {
using namespace tsr::detail;

// Spec §9 for binary ops, extended to every op that is linear in an operand:
// add/sub of two sum-unreduced values on the same axes, max/min of two values
// unreduced of that kind, mul by (or div by) a value replicated over the
// unreduced axes (JAX requires it to be `reduced` there; replicated is as exact).
PartitionSpec binary_unreduced_sets(const char* name, BinaryOp op,
                                    const std::vector<ArrayType>& in) {
  const auto& ul = unreduced_of(in[0]);
  const auto& ur = unreduced_of(in[1]);
  std::set<std::string> red = nary_reduced(name, in);
  if (ul.empty() && ur.empty()) return PartitionSpec({}, {}, red);
  UnreducedKind kl = in[0].sharding.spec().unreduced_kind();
  UnreducedKind kr = in[1].sharding.spec().unreduced_kind();
  std::optional<UnreducedKind> both;  // the kind both operands must share
  if (op == BinaryOp::Add || op == BinaryOp::Sub) both = UnreducedKind::Sum;
  if (op == BinaryOp::Max) both = UnreducedKind::Max;
  if (op == BinaryOp::Min) both = UnreducedKind::Min;
  if (both) {
    if (!ul.empty() && !ur.empty()) {
      if (ul != ur)
        throw ShardingTypeError(
            std::string("[") + name + "] lhs and rhs to `" + name +
            "` must be unreduced along the same mesh axes. Got lhs=" + quoted_set(ul) +
            ", rhs=" + quoted_set(ur) + ". Reshard one operand first.");
      if (kl != *both || kr != *both)
        throw ShardingTypeError(std::string("[") + name + "] `" + name +
                                "` combines unreduced values only when both are unreduced of "
                                "kind " +
                                unreduced_kind_name(*both) +
                                ". Got lhs=" + in[0].sharding.spec().repr() +
                                " and rhs=" + in[1].sharding.spec().repr() +
                                ". Reduce them first with reshard(x, P(...)).");
      return PartitionSpec({}, ul, {}, *both);
    }
    const char* u = ul.empty() ? "rhs" : "lhs";
    const char* o = ul.empty() ? "lhs" : "rhs";
    throw ShardingTypeError(std::string("[") + name + "] " + u + " is unreduced while " + o +
                            " is not. `" + name +
                            "` operation does not allow this because there will be implicit "
                            "communication. Please reduce " +
                            u + " via `reshard` before calling `" + name + "`.");
  }
  if (op == BinaryOp::Mul || op == BinaryOp::Div) {
    if (op == BinaryOp::Div && !ur.empty())
      throw ShardingTypeError("[div] The denominator cannot be unreduced passed to `div`. Got y=" +
                              in[1].str() + ". Reduce it first with reshard(y, P(...)).");
    if (!ul.empty() && !ur.empty())
      throw ShardingTypeError(
          std::string("[") + name +
          "] lhs and rhs to `mul` cannot be unreduced since mul is bilinear. Got lhs=" +
          quoted_set(ul) + ", rhs=" + quoted_set(ur) + ". Reduce one operand with reshard first.");
    bool left = !ul.empty();
    const ArrayType& u = in[left ? 0 : 1];
    const ArrayType& other = in[left ? 1 : 0];
    const auto& axes = unreduced_of(u);
    if (u.sharding.spec().unreduced_kind() != UnreducedKind::Sum)
      throw ShardingTypeError(std::string("[") + name + "] `" + name +
                              "` scales an unreduced value only when it is unreduced of kind "
                              "sum. Got " +
                              u.str() +
                              "; expected unreduced_kind=sum. Reduce it first with "
                              "reshard(x, P(...)).");
    // A reduced set other than these axes (on either factor) would make the result
    // unreduced and reduced at once, and its cotangent times this factor a product of
    // two unreduced values: refused here, where the transpose could not follow.
    if (!replicated_over(other, axes) || (!red.empty() && red != axes))
      throw ShardingTypeError(std::string("[") + name + "] " + (left ? "RHS" : "LHS") +
                              " should be reduced along the same axes " + (left ? "LHS" : "RHS") +
                              " is unreduced on. Got lhs=" + in[0].str() + " and rhs=" +
                              in[1].str() + "; expected the other operand reduced over exactly " +
                              quoted_set(axes) + ", or replicated over them and not reduced. " +
                              "Reshard it to P(..., Reduced{...}) on those axes.");
    return PartitionSpec({}, axes, {}, UnreducedKind::Sum);
  }
  no_unreduced(name, in);
  return {};
}

namespace {
// Operands shaped like the output take its layout; rank-0 ones stay whole.
// Each keeps its own unreduced/reduced sets (a whole predicate stays whole).
Lowering like_output(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out) {
  Lowering l;
  const PartitionSpec& s = out[0].sharding.spec();
  for (const auto& t : in)
    l.in.push_back(t.ndim() == 0 ? with_sets_of({}, t.sharding.spec())
                                 : layout_with_sets(entries_of(out[0]), t.sharding.spec()));
  l.out.push_back(s);
  return l;
}
}  // namespace

const char* unary_name(UnaryOp op) { return kUnaryNames[static_cast<int>(op)]; }
const char* binary_name(BinaryOp op) { return kBinaryNames[static_cast<int>(op)]; }
bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }

std::vector<ArrayType> Unary::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  unsigned ok = accepted(op_);
  if (!(class_of(x.dtype) & ok))
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept dtype " +
                    dtype_name(x.dtype) + ". Accepted dtypes are subtypes of " + class_names(ok) +
                    ". Got " + x.str() + ". Convert with astype first" +
                    (ok == kFloatC ? " (e.g. astype(float32))." : "."));
  if (op_ == UnaryOp::Neg && !unreduced_of(x).empty()) {
    // neg is linear: -(a + b) = -a + -b, and -max(a, b) = min(-a, -b).
    const PartitionSpec& sp = x.sharding.spec();
    UnreducedKind k = sp.unreduced_kind() == UnreducedKind::Sum   ? UnreducedKind::Sum
                      : sp.unreduced_kind() == UnreducedKind::Max ? UnreducedKind::Min
                                                                  : UnreducedKind::Max;
    ArrayType t = x;
    t.sharding = NamedSharding(x.sharding.mesh(), sp.with_sets(sp.unreduced(), sp.reduced(), k));
    return {t};
  }
  no_unreduced(name(), in);
  if (op_ == UnaryOp::IsFinite) return {same_as(x, DType::Bool, false)};
  if (op_ == UnaryOp::Abs && is_complex(x.dtype)) return {same_as(x, real_dtype(x.dtype), x.weak)};
  return {x};
}

std::vector<ArrayType> IntegerPow::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (x.dtype == DType::Bool)
    throw TypeError("[integer_pow] integer_pow does not accept bool. Got " + x.str() +
                    "; expected a numeric array. Convert with astype first.");
  if (y_ < 0 && !is_inexact(x.dtype))
    throw TypeError("[integer_pow] a negative exponent needs a floating-point base. Got y=" +
                    std::to_string(y_) + " and " + x.str() +
                    "; expected a float array. Convert with astype(float32).");
  no_unreduced(name(), in);
  return {x};
}

std::vector<ArrayType> Binary::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &a = in.at(0), &b = in.at(1);
  if (a.dtype != b.dtype)
    throw TypeError(std::string("[") + name() + "] " + name() +
                    " requires arguments to have the same dtypes, got " + dtype_name(a.dtype) +
                    ", " + dtype_name(b.dtype) +
                    ". Convert one with astype (the tsr:: operators promote for you).");
  bool logical = op_ == BinaryOp::And || op_ == BinaryOp::Or || op_ == BinaryOp::Xor;
  if (logical && is_inexact(a.dtype))
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept dtype " +
                    dtype_name(a.dtype) + ". Got " + a.str() +
                    "; expected bool or integer operands.");
  if (op_ == BinaryOp::Atan2 && !is_floating(a.dtype))
    throw TypeError(std::string("[atan2] atan2 does not accept dtype ") + dtype_name(a.dtype) +
                    ". Got " + a.str() + "; expected floating-point operands.");
  bool ordered = op_ == BinaryOp::Rem || op_ == BinaryOp::Lt || op_ == BinaryOp::Le ||
                 op_ == BinaryOp::Gt || op_ == BinaryOp::Ge;
  if (ordered && is_complex(a.dtype))
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept dtype " +
                    dtype_name(a.dtype) + ". Got " + a.str() +
                    "; expected an ordered (integer or floating) dtype: complex numbers have no "
                    "order. Compare real parts (tsr::real) or magnitudes (tsr::abs).");
  if (!logical && !is_comparison(op_) && a.dtype == DType::Bool && op_ != BinaryOp::Max &&
      op_ != BinaryOp::Min)
    throw TypeError(std::string("[") + name() + "] " + name() +
                    " does not accept dtype bool. Got " + a.str() +
                    "; expected numeric operands. Convert with astype first.");
  Shape shape;
  std::vector<PartitionEntry> e = broadcast_entries(name(), in, shape);
  PartitionSpec sets = binary_unreduced_sets(name(), op_, in);
  DType dt = is_comparison(op_) ? DType::Bool : a.dtype;
  bool weak = is_comparison(op_) ? false : (a.weak && b.weak);
  return {make_type(shape, dt, weak, rule_mesh(in), e, sets)};
}

std::vector<ArrayType> SelectN::infer(const std::vector<ArrayType>& in) const {
  if (in.size() < 2)
    throw TypeError("[select_n] select_n needs a predicate and at least one case. Got " +
                    std::to_string(in.size()) + " operands; expected 2 or more.");
  const ArrayType& w = in[0];
  if (w.dtype != DType::Bool && w.dtype != DType::Int32)
    throw TypeError(std::string("[select_n] which must be boolean or int32, got ") +
                    dtype_name(w.dtype) + ". Compare to get a bool predicate.");
  if (w.dtype == DType::Bool && in.size() > 3)
    throw TypeError("[select_n] a boolean which selects between two cases. Got " +
                    std::to_string(in.size() - 1) + " cases; expected 2. Use an int32 which.");
  const ArrayType& c0 = in[1];
  for (size_t i = 2; i < in.size(); ++i)
    if (in[i].shape != c0.shape || in[i].dtype != c0.dtype)
      throw TypeError("[select_n] select cases must have the same shapes and dtypes, got " +
                      in[i].str() + " and " + c0.str() + ". Broadcast and convert them first.");
  if (w.ndim() != 0 && w.shape != c0.shape)
    throw TypeError(
        "[select_n] select `which` must be scalar or have the same shape as cases, got "
        "`which` shape " +
        shape_str(w.shape) + " but case shape " + shape_str(c0.shape) + ". Broadcast it first.");
  const NamedSharding* cs = nullptr;
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].sharding.mesh().empty()) continue;
    if (cs && !(in[i].sharding == *cs)) {
      std::string list;
      for (size_t j = 1; j < in.size(); ++j)
        list += (j > 1 ? ", " : "") + in[j].sharding.spec().repr();
      throw ShardingTypeError("[select_n] select cases must have the same shardings, got [" + list +
                              "]. Reshard the cases to one sharding.");
    }
    if (!cs) cs = &in[i].sharding;
  }
  if (w.ndim() != 0 && cs && !w.sharding.mesh().empty() &&
      (!(w.sharding.mesh() == cs->mesh()) || w.sharding.spec().entries() != cs->spec().entries()))
    throw ShardingTypeError(
        "[select_n] select `which` must be scalar or have the same sharding as "
        "cases, got `which` sharding " +
        w.sharding.spec().repr() + " but case sharding " + cs->spec().repr() +
        ". Reshard `which` to the cases' sharding.");
  if (cs && !cs->spec().unreduced().empty())
    for (size_t i = 1; i < in.size(); ++i)
      if (!(in[i].sharding == *cs))
        throw ShardingTypeError("[select_n] select cases must have the same shardings, got " +
                                in[i].str() + " and " + c0.str() +
                                "; expected every case unreduced over the same axes. Reshard "
                                "the cases to one sharding.");
  std::vector<ArrayType> cases(in.begin() + 1, in.end());
  // Selecting between partial values is linear in the cases (same sets on all,
  // checked above); the predicate must be whole.
  no_unreduced("select_n", {w});
  bool weak = true;
  for (const auto& c : cases) weak = weak && c.weak;
  if (cs) return {make_type(c0.shape, c0.dtype, weak, *cs)};
  return {make_type(c0.shape, c0.dtype, weak, rule_mesh(in), PartitionSpec())};
}

Lowering SelectN::partition(const std::vector<ArrayType>& in,
                            const std::vector<ArrayType>& out) const {
  return like_output(in, out);
}

std::vector<ArrayType> Clamp::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &lo = in.at(0), &x = in.at(1), &hi = in.at(2);
  for (const ArrayType* b : {&lo, &hi}) {
    if (b->dtype != x.dtype)
      throw TypeError(std::string("[clamp] clamp requires min, operand and max to have the same "
                                  "dtype. Got ") +
                      dtype_name(b->dtype) + " and " + dtype_name(x.dtype) +
                      "; expected equal dtypes. Convert with astype.");
    if (b->ndim() != 0 && b->shape != x.shape)
      throw TypeError(
          "[clamp] clamp requires min and max to be scalars or shaped like the "
          "operand. Got " +
          shape_str(b->shape) + " and " + shape_str(x.shape) + "; expected () or " +
          shape_str(x.shape) + ". Broadcast them first.");
  }
  no_unreduced("clamp", in);
  return {x};
}

Lowering Clamp::partition(const std::vector<ArrayType>& in,
                          const std::vector<ArrayType>& out) const {
  return like_output(in, out);
}

std::vector<ArrayType> Convert::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  ArrayType out = same_as(x, dtype_, weak_);
  if (sharding_) {
    const PartitionSpec& s = sharding_->spec();
    if (!s.unreduced().empty() && s.unreduced_kind() != UnreducedKind::Sum)
      throw ValueError(
          "[convert_element_type] `sharding` passed to `convert_element_type` can only contain "
          "unreduced of kind `sum`. Got sharding=" +
          s.repr() + "; expected unreduced_kind=sum. Use reshard for max/min kinds.");
    out = make_type(x.shape, dtype_, weak_, *sharding_);
  }
  // Each device converts its own partial value: right only when conversion
  // commutes with combining partials (float -> float, up to rounding).
  bool commutes = x.dtype == dtype_ || (is_inexact(x.dtype) && is_inexact(dtype_));
  if (!unreduced_of(out).empty() && !commutes) {
    std::string how = sharding_ ? "Drop the unreduced axes from `sharding`, or convert after "
                                  "reducing with reshard."
                                : "Reduce it first with reshard(x, P(...)) and convert the result.";
    throw ShardingTypeError(
        std::string("[convert_element_type] an unreduced value cannot be converted from ") +
        dtype_name(x.dtype) + " to " + dtype_name(dtype_) +
        ": each device would convert its partial value, and the converted partials do not "
        "combine to the converted value. Got " +
        x.str() + " -> " + out.str() + "; expected a float -> float conversion. " + how);
  }
  return {out};
}

Lowering Convert::partition(const std::vector<ArrayType>& in,
                            const std::vector<ArrayType>& out) const {
  // The input is brought to the output's layout (sets included), then converted.
  return Lowering{{out[0].sharding.spec()}, {out[0].sharding.spec()}};
}

std::string Convert::params() const {
  return std::string("new_dtype=") + dtype_name(dtype_) + (weak_ ? " weak_type=True" : "") +
         (sharding_ ? " sharding=" + p_sharding(sharding_) : "");
}

// ---- autodiff rules ----------------------------------------------------------------
// JVPs follow lax.py's rules, so derivatives at non-differentiable points match JAX:
// abs'(0) = 1 (select(x >= 0, g, -g)), max/min split ties evenly, pow's y=0 and x=0.

namespace {

constexpr double kSqrtPi = 1.7724538509055160273;

// A tangent of an operand broadcast (size-1 dims, rank 0) up to the output's shape.
Array expand(const Array& t, const Array& out) {
  if (!t.valid() || t.shape() == out.shape()) return t;
  std::vector<int> dims;
  for (int d = 0; d < t.ndim(); ++d) dims.push_back(d);
  ArrayType want = out.type();
  want.dtype = t.dtype();
  want.weak = t.type().weak;
  return ad::broadcast_to_type(t, want, dims);
}

Array div_(const Array& a, const Array& b) {
  return bind1(std::make_shared<Binary>(BinaryOp::Div), {a, b});
}

[[noreturn]] void bilinear(const char* op) {
  throw NotImplementedError(std::string("[transpose] both operands of '") + op +
                            "' depend on the linear inputs, so the function is not linear in "
                            "them. Got a product of two linear values; expected one operand that "
                            "does not depend on the inputs.");
}

// _balanced_eq(x, z, y): 1 where x == z, halved where y == z too (ties split). As
// masks over scalars, so no full-size constants are made.
Array balanced_eq(const Array& x, const Array& z, const Array& y) {
  Array mx = convert_element_type(equal(x, z), z.dtype());
  Array my = convert_element_type(equal(y, z), z.dtype());
  return mx / (my + 1.0);
}

}  // namespace

std::vector<Array> Unary::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                              std::vector<Array>& outs) const {
  const Array &x = primals[0], &t = tangents[0], &y = outs[0];
  switch (op_) {
    case UnaryOp::Neg:
      return {ad::negate(t)};
    case UnaryOp::Abs:
      if (is_complex(x.dtype())) {
        // lax: real(t conj(x) / |x|), with |x| = 0 replaced by 1.
        Array ax = convert_element_type(y, x.dtype());
        Array safe = where(equal(ax, 0), ones_like(ax), ax);
        return {real(ad::scale(t, conj(x) / safe))};
      }
      return {where(greater_equal(x, 0), t, neg(t))};
    case UnaryOp::Exp:
      return {ad::scale(t, y)};
    case UnaryOp::Exp2:
      return {ad::scale(t, y * std::log(2.0))};
    case UnaryOp::Log:
      return {div_(t, x)};
    case UnaryOp::Log1p:
      return {div_(t, x + 1.0)};
    case UnaryOp::Expm1:
      return {ad::scale(t, y + 1.0)};
    case UnaryOp::Sqrt:
      return {ad::scale(t, 0.5 / y)};
    case UnaryOp::Rsqrt:
      return {ad::scale(t, (y / x) * -0.5)};
    case UnaryOp::Square:
      return {ad::scale(t, x * 2.0)};
    case UnaryOp::Sin:
      return {ad::scale(t, cos(x))};
    case UnaryOp::Cos:
      return {ad::scale(t, neg(sin(x)))};
    case UnaryOp::Tan:
      return {ad::scale(t, square(y) + 1.0)};
    case UnaryOp::Tanh:
      return {ad::scale(t + t * y, 1.0 - y)};
    case UnaryOp::Logistic:
      return {ad::scale(t, y * (1.0 - y))};
    case UnaryOp::Erf:
      return {ad::scale(t, exp(neg(square(x))) * (2.0 / kSqrtPi))};
    case UnaryOp::ErfInv:
      return {ad::scale(t, exp(square(y)) * (kSqrtPi / 2.0))};
    default:  // sign, floor, ceil, round: zero almost everywhere; the rest have bool results
      return {Array()};
  }
}

std::vector<Array> Unary::transpose(const std::vector<Array>& cts,
                                    const std::vector<LinearIn>& ins) const {
  if (op_ != UnaryOp::Neg) return Primitive::transpose(cts, ins);
  return {ad::negate(cts[0])};
}

std::vector<Array> IntegerPow::jvp(const std::vector<Array>& primals,
                                   const std::vector<Array>& tangents, std::vector<Array>&) const {
  if (y_ == 0) return {Array()};
  const Array& x = primals[0];
  Array f = y_ == 1 ? ones_like(x) : integer_pow(x, y_ - 1) * static_cast<double>(y_);
  return {ad::scale(tangents[0], f)};
}

std::vector<Array> Binary::jvp(const std::vector<Array>& primals,
                               const std::vector<Array>& tangents, std::vector<Array>& outs) const {
  const Array &x = primals[0], &y = primals[1], &tx = tangents[0], &ty = tangents[1];
  const Array& out = outs[0];
  Array r;
  switch (op_) {
    case BinaryOp::Add:
      r = ad::add(tx, ty);
      break;
    case BinaryOp::Sub:
      r = ad::sub(tx, ty);
      break;
    case BinaryOp::Mul:
      r = ad::add(ad::scale(tx, y), ad::scale(ty, x));
      break;
    case BinaryOp::Div:
      r = ad::add(tx.valid() ? div_(tx, y) : Array(), ad::scale(ty, neg(x) / square(y)));
      break;
    case BinaryOp::Rem:
      r = ad::add(tx, ad::scale(ty, neg(sign(x / y) * floor(abs(x / y)))));
      break;
    case BinaryOp::Pow: {
      Array lhs = tx.valid() ? ad::scale(tx, y * power(x, y - 1.0)) : Array();
      Array rhs =
          ty.valid() ? ad::scale(ty, log(where(equal(x, 0), ones_like(x), x)) * out) : Array();
      r = ad::add(lhs, rhs);
      break;
    }
    case BinaryOp::Max:
    case BinaryOp::Min:
      r = ad::add(tx.valid() ? ad::scale(tx, balanced_eq(x, out, y)) : Array(),
                  ty.valid() ? ad::scale(ty, balanced_eq(y, out, x)) : Array());
      break;
    case BinaryOp::Atan2: {
      Array d = square(x) + square(y);
      r = ad::add(tx.valid() ? ad::scale(tx, y / d) : Array(),
                  ty.valid() ? ad::scale(ty, neg(x) / d) : Array());
      break;
    }
    default:  // logical, bitwise and comparisons: bool or integer results
      return {Array()};
  }
  return {expand(r, out)};
}

std::vector<Array> Binary::transpose(const std::vector<Array>& cts,
                                     const std::vector<LinearIn>& ins) const {
  const Array& ct = cts[0];
  const LinearIn &x = ins[0], &y = ins[1];
  auto both = [&](const Array& cx, const Array& cy) {
    return std::vector<Array>{x.linear() ? ad::unbroadcast(cx, x.type) : Array(),
                              y.linear() ? ad::unbroadcast(cy, y.type) : Array()};
  };
  switch (op_) {
    case BinaryOp::Add:
      return both(ct, ct);
    case BinaryOp::Sub:
      return both(ct, y.linear() ? ad::negate(ct) : Array());
    case BinaryOp::Mul:
      if (x.linear() && y.linear()) bilinear("mul");
      return x.linear() ? both(ad::scale(ct, y.value), Array())
                        : both(Array(), ad::scale(ct, x.value));
    case BinaryOp::Div:
      if (y.linear()) bilinear("div");
      return both(div_(ct, y.value), Array());
    default:
      return Primitive::transpose(cts, ins);
  }
}

std::vector<Array> SelectN::jvp(const std::vector<Array>& primals,
                                const std::vector<Array>& tangents, std::vector<Array>&) const {
  Array like = ad::first_valid(tangents);
  std::vector<Array> t;
  for (size_t i = 1; i < primals.size(); ++i)
    t.push_back(ad::instantiate(tangents[i], primals[i].type(), like));
  return {select_n(primals[0], t)};
}

std::vector<Array> SelectN::transpose(const std::vector<Array>& cts,
                                      const std::vector<LinearIn>& ins) const {
  const Array& ct = cts[0];
  std::vector<Array> out(ins.size());
  Array zero;
  for (size_t i = 1; i < ins.size(); ++i) {
    if (!ins[i].linear()) continue;
    if (!zero.valid()) zero = zeros_of(ct.type(), ct);
    std::vector<Array> cases(ins.size() - 1, zero);
    cases[i - 1] = ct;
    out[i] = select_n(ins[0].value, cases);
  }
  return out;
}

std::vector<Array> Clamp::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                              std::vector<Array>& outs) const {
  const Array &lo = primals[0], &x = primals[1], &hi = primals[2];
  // Operands and tangents may be laid out unlike the output (clamp lays them out as
  // it; a scalar bound has rank 0); select_n wants predicate and cases laid out alike.
  const ArrayType& ot = outs[0].type();
  Array zero = zeros_of(ot, outs[0]);
  auto at_out = [&](const Array& a) {
    ArrayType t = ot;
    t.dtype = a.dtype();
    t.weak = a.type().weak;
    Array b = a.shape() == ot.shape ? a : broadcast_to(a, ot.shape);
    // An off-mesh operand (coerce leaves those be) goes onto the output's mesh.
    if (b.type().sharding.mesh().empty() && !ot.sharding.mesh().empty())
      b = bind1(std::make_shared<Reshard>(ot.sharding.normalized(ot.ndim()), std::nullopt), {b});
    return ad::coerce(b, t, "clamp", "tangent");
  };
  auto pick = [&](const Array& pred, const Array& t) {
    return where(at_out(pred), at_out(t), zero);
  };
  // The comparisons, like the primal, in the output's layout.
  Array l = at_out(lo), xo = at_out(x), h = at_out(hi);
  Array r;
  if (tangents[0].valid())
    r = ad::add(r, pick(logical_and(greater(l, xo), less(l, h)), tangents[0]));
  if (tangents[1].valid())
    r = ad::add(r, pick(logical_and(greater(xo, l), less(xo, h)), tangents[1]));
  if (tangents[2].valid()) r = ad::add(r, pick(less(h, xo), tangents[2]));
  return {r};
}

std::vector<Array> Convert::jvp(const std::vector<Array>& primals,
                                const std::vector<Array>& tangents, std::vector<Array>&) const {
  if (!has_tangent_space(primals[0].dtype()) || !has_tangent_space(dtype_)) return {Array()};
  return ad::linear_jvp(*this, primals, tangents);
}

std::vector<Array> Convert::transpose(const std::vector<Array>& cts,
                                      const std::vector<LinearIn>&) const {
  // The pass gives the cotangent its input's type: the dtype and sharding back.
  return {cts[0]};
}

// ---- Batching rules (vmap): the batch goes to dimension 0 and the primitive's own
// broadcasting does the rest; select_n and clamp need their operands full-size.

detail::Batched Unary::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return detail::batch_elementwise(*this, args, dims);
}
detail::Batched IntegerPow::batch(const std::vector<Array>& args,
                                  const std::vector<int>& dims) const {
  return detail::batch_elementwise(*this, args, dims);
}
detail::Batched Binary::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return detail::batch_elementwise(*this, args, dims);
}

namespace {
// Operands with the batch at 0 (unbatched ones unchanged, dims -1).
std::vector<Array> to_front(const std::vector<Array>& args, const std::vector<int>& dims) {
  std::vector<Array> m;
  for (size_t i = 0; i < args.size(); ++i)
    m.push_back(dims[i] >= 0 ? detail::move_batch(args[i], dims[i], 0) : args[i]);
  return m;
}
// The batched type of the operand that fixes the shape: the first batched of `idx`
// (already at the front in m), else the first of them with the batch inserted.
ArrayType batched_like(const std::vector<Array>& m, const std::vector<int>& dims,
                       const std::vector<size_t>& idx) {
  for (size_t i : idx)
    if (dims[i] >= 0) return m[i].type();
  return detail::batched_type(m[idx[0]].type(), 0);
}
// A scalar-or-full operand (select_n's which, clamp's bounds): unbatched scalars stay.
// It takes the cases' layout but keeps its own sets: a predicate is never unreduced
// (the cases may be: the cotangents of a batched transpose).
Array scalar_or_full(const Array& a, int d, const ArrayType& like) {
  if (d < 0 && a.ndim() == 0) return a;
  ArrayType t = like;
  t.dtype = a.dtype();
  t.sharding = NamedSharding(like.sharding.mesh(),
                             layout_with_sets(entries_of(like), a.type().sharding.spec()));
  return detail::batch_full(a, d >= 0 ? 0 : -1, t);
}
}  // namespace

detail::Batched SelectN::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  std::vector<Array> m = to_front(args, dims);
  std::vector<size_t> cases;
  for (size_t i = 1; i < args.size(); ++i) cases.push_back(i);
  ArrayType like = batched_like(m, dims, cases);
  std::vector<Array> ins{scalar_or_full(m[0], dims[0], like)};
  for (size_t i : cases) ins.push_back(detail::batch_full(m[i], dims[i] >= 0 ? 0 : -1, like));
  return {{detail::bind1(shared_from_this(), ins)}, {0}};
}

detail::Batched Clamp::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  std::vector<Array> m = to_front(args, dims);
  ArrayType like = batched_like(m, dims, {1});
  Array x = detail::batch_full(m[1], dims[1] >= 0 ? 0 : -1, like);
  return {{detail::bind1(shared_from_this(), {scalar_or_full(m[0], dims[0], like), x,
                                              scalar_or_full(m[2], dims[2], like)})},
          {0}};
}

detail::Batched Convert::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  auto p = std::make_shared<Convert>(dtype_, weak_, detail::batched_sharding(sharding_, 0, name()));
  return detail::batch_unary_front(p, args[0], dims[0]);
}

}  // namespace tsr::prim
