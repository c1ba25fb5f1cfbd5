// Elementwise front-ends: promote dtypes (JAX lattice, weak scalars), promote
// ranks (NumPy), then bind the primitive; lax size-1 broadcasting does the rest.
#include <array>
#include <optional>

#include "tsr/core/array_impl.h"
#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/elementwise.h"
#include "tsr/prims/shape_ops.h"

namespace tsr {
using namespace detail;
using prim::BinaryOp;
using prim::UnaryOp;

namespace {

// One immutable primitive per op, shared: a fresh one per call was a heap
// allocation per eager op.
PrimPtr unary_prim(UnaryOp op) {
  static const auto table = [] {
    std::array<PrimPtr, prim::kNumUnaryOps> t;
    for (int i = 0; i < prim::kNumUnaryOps; ++i)
      t[static_cast<size_t>(i)] = std::make_shared<prim::Unary>(static_cast<UnaryOp>(i));
    return t;
  }();
  return table[static_cast<size_t>(op)];
}
PrimPtr binary_prim(BinaryOp op) {
  static const auto table = [] {
    std::array<PrimPtr, prim::kNumBinaryOps> t;
    for (int i = 0; i < prim::kNumBinaryOps; ++i)
      t[static_cast<size_t>(i)] = std::make_shared<prim::Binary>(static_cast<BinaryOp>(i));
    return t;
  }();
  return table[static_cast<size_t>(op)];
}

Array unary(UnaryOp op, const Array& x, bool to_float) {
  if (to_float && !is_inexact(x.dtype()))
    return bind1(unary_prim(op), {convert(x, DType::Float32)});
  return bind1(unary_prim(op), {x});
}

// `bool_op` replaces op when both operands promote to bool (jnp: bool + bool is
// logical or, bool * bool logical and; lax.add/mul refuse bool).
Array binary(BinaryOp op, const ArrayLike& a, const ArrayLike& b, const char* name,
             std::optional<BinaryOp> bool_op = {}) {
  const auto* x = std::get_if<Array>(&a.value());
  const auto* y = std::get_if<Array>(&b.value());
  if (x && y && x->valid() && y->valid() && x->dtype() == y->dtype() &&
      x->type().weak == y->type().weak && x->ndim() == y->ndim()) {
    // Nothing to promote (the common case): skip building the promoted lists.
    if (bool_op && x->dtype() == DType::Bool) op = *bool_op;
    return bind1(binary_prim(op), {*x, *y});
  }
  std::vector<Array> v = promote_ranks(promote({a, b}, name));
  if (bool_op && v[0].dtype() == DType::Bool) op = *bool_op;
  return bind1(binary_prim(op), v);
}

Array to_bool(const ArrayLike& a) {
  if (const auto* x = std::get_if<Array>(&a.value()))
    return x->dtype() == DType::Bool ? *x : not_equal(*x, 0);
  Array v = promote({a}, "logical")[0];
  return v.dtype() == DType::Bool ? v : not_equal(v, 0);
}

}  // namespace

Array neg(const Array& x) { return unary(UnaryOp::Neg, x, false); }
// jnp returns bool and unsigned values unchanged from abs, and integral values
// from floor/ceil/round; bool reaches the round primitive, which refuses it.
Array abs(const Array& x) {
  if (x.dtype() == DType::Bool || is_unsigned(x.dtype())) return x;
  return unary(UnaryOp::Abs, x, false);
}
Array sign(const Array& x) { return unary(UnaryOp::Sign, x, false); }
// jnp: integral values come back unchanged; floats and complex (refused) reach the rule.
Array floor(const Array& x) { return is_inexact(x.dtype()) ? unary(UnaryOp::Floor, x, false) : x; }
Array ceil(const Array& x) { return is_inexact(x.dtype()) ? unary(UnaryOp::Ceil, x, false) : x; }
Array round(const Array& x) { return is_integer(x.dtype()) ? x : unary(UnaryOp::Round, x, false); }
Array exp(const Array& x) { return unary(UnaryOp::Exp, x, true); }
Array exp2(const Array& x) { return unary(UnaryOp::Exp2, x, true); }
Array log(const Array& x) { return unary(UnaryOp::Log, x, true); }
Array log1p(const Array& x) { return unary(UnaryOp::Log1p, x, true); }
Array expm1(const Array& x) { return unary(UnaryOp::Expm1, x, true); }
Array sqrt(const Array& x) { return unary(UnaryOp::Sqrt, x, true); }
Array rsqrt(const Array& x) { return unary(UnaryOp::Rsqrt, x, true); }
// jnp.square promotes bool to a number (int32) first.
Array square(const Array& x) {
  return unary(UnaryOp::Square, x.dtype() == DType::Bool ? convert(x, DType::Int32) : x, false);
}
Array sin(const Array& x) { return unary(UnaryOp::Sin, x, true); }
Array cos(const Array& x) { return unary(UnaryOp::Cos, x, true); }
Array tan(const Array& x) { return unary(UnaryOp::Tan, x, true); }
Array tanh(const Array& x) { return unary(UnaryOp::Tanh, x, true); }
Array logistic(const Array& x) { return unary(UnaryOp::Logistic, x, true); }
Array sigmoid(const Array& x) { return logistic(x); }
Array erf(const Array& x) { return unary(UnaryOp::Erf, x, true); }
Array erfinv(const Array& x) { return unary(UnaryOp::ErfInv, x, true); }
Array isfinite(const Array& x) {
  // jnp.isfinite of a complex number: both parts finite.
  if (is_complex(x.dtype())) return logical_and(isfinite(real(x)), isfinite(imag(x)));
  if (!is_floating(x.dtype())) return full_like(x, 1, DType::Bool);
  return unary(UnaryOp::IsFinite, x, false);
}
Array logical_not(const Array& x) { return unary(UnaryOp::Not, to_bool(x), false); }
Array integer_pow(const Array& x, int y) {
  return bind1(std::make_shared<prim::IntegerPow>(y), {x});
}

Array add(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Add, a, b, "add", BinaryOp::Or);
}
Array subtract(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Sub, a, b, "sub");
}
Array multiply(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Mul, a, b, "mul", BinaryOp::And);
}
Array divide(const ArrayLike& a, const ArrayLike& b) {
  std::vector<Array> v = promote({a, b}, "div");
  if (!is_inexact(v[0].dtype()))  // true division, as jnp.divide
    for (auto& x : v) x = convert(x, DType::Float32, x.type().weak);
  v = promote_ranks(v);
  return bind1(std::make_shared<prim::Binary>(BinaryOp::Div), v);
}
Array rem(const ArrayLike& a, const ArrayLike& b) { return binary(BinaryOp::Rem, a, b, "rem"); }
// jnp.remainder: lax.rem (sign of a), moved into b's sign where they differ.
Array remainder(const ArrayLike& a, const ArrayLike& b) {
  std::vector<Array> v = promote_ranks(promote({a, b}, "remainder"));
  Array r = rem(v[0], v[1]);
  if (is_unsigned(r.dtype()) || r.dtype() == DType::Bool) return r;
  Array fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(v[1], 0)));
  return where(fix, r + v[1], r);
}
Array mod(const ArrayLike& a, const ArrayLike& b) { return remainder(a, b); }
// jnp.floor_divide: integers round the truncated quotient down where signs differ;
// floats divide and floor (jnp's _float_divmod gives the same for finite values).
Array floor_divide(const ArrayLike& a, const ArrayLike& b) {
  std::vector<Array> v = promote_ranks(promote({a, b}, "floor_divide"));
  if (is_floating(v[0].dtype())) return floor(divide(v[0], v[1]));
  Array q = binary(BinaryOp::Div, v[0], v[1], "floor_divide");
  if (is_unsigned(q.dtype()) || q.dtype() == DType::Bool) return q;
  Array fix = logical_and(not_equal(less(v[0], 0), less(v[1], 0)), not_equal(rem(v[0], v[1]), 0));
  return where(fix, q - 1, q);
}
Array power(const ArrayLike& a, const ArrayLike& b) { return binary(BinaryOp::Pow, a, b, "pow"); }
Array maximum(const ArrayLike& a, const ArrayLike& b) { return binary(BinaryOp::Max, a, b, "max"); }
Array minimum(const ArrayLike& a, const ArrayLike& b) { return binary(BinaryOp::Min, a, b, "min"); }
Array atan2(const ArrayLike& a, const ArrayLike& b) {
  std::vector<Array> v = promote({a, b}, "atan2");
  if (!is_floating(v[0].dtype()))
    for (auto& x : v) x = convert(x, DType::Float32, x.type().weak);
  return bind1(std::make_shared<prim::Binary>(BinaryOp::Atan2), promote_ranks(v));
}
Array logical_and(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::And, to_bool(a), to_bool(b), "and");
}
Array logical_or(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Or, to_bool(a), to_bool(b), "or");
}
Array logical_xor(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Xor, to_bool(a), to_bool(b), "xor");
}
Array bitwise_and(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::And, a, b, "and");
}
Array bitwise_or(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Or, a, b, "or");
}
Array bitwise_xor(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Xor, a, b, "xor");
}
Array equal(const ArrayLike& a, const ArrayLike& b) { return binary(BinaryOp::Eq, a, b, "eq"); }
Array not_equal(const ArrayLike& a, const ArrayLike& b) { return binary(BinaryOp::Ne, a, b, "ne"); }
Array less(const ArrayLike& a, const ArrayLike& b) { return binary(BinaryOp::Lt, a, b, "lt"); }
Array less_equal(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Le, a, b, "le");
}
Array greater(const ArrayLike& a, const ArrayLike& b) { return binary(BinaryOp::Gt, a, b, "gt"); }
Array greater_equal(const ArrayLike& a, const ArrayLike& b) {
  return binary(BinaryOp::Ge, a, b, "ge");
}

Array where(const ArrayLike& cond, const ArrayLike& x, const ArrayLike& y) {
  Array c = to_bool(cond);
  std::vector<Array> v = promote({x, y}, "where");
  std::vector<Array> all = promote_ranks({c, v[0], v[1]});
  // jnp.where broadcasts every operand to the result shape and sharding (§12.4).
  std::vector<ArrayType> types;
  for (const auto& a : all) types.push_back(a.type());
  Shape shape;
  std::vector<PartitionEntry> e = broadcast_entries("where", types, shape);
  std::optional<NamedSharding> target;  // the result sharding every operand is broadcast to
  for (const auto& t : types)
    if (!t.sharding.mesh().empty()) target = NamedSharding(t.sharding.mesh(), PartitionSpec(e));
  for (size_t k = 0; k < all.size(); ++k) {
    Array& a = all[k];
    // A rank-0 predicate is fine for select_n; rank-0 cases are broadcast too.
    bool scalar_case = a.ndim() == 0 && k > 0 && !shape.empty();
    if (a.shape() == shape || (a.ndim() == 0 && !scalar_case)) continue;
    std::vector<int> bd(static_cast<size_t>(a.ndim()));
    for (int d = 0; d < a.ndim(); ++d) bd[d] = d;
    a = bind1(std::make_shared<prim::BroadcastInDim>(shape, bd, target), {a});
  }
  return bind1(std::make_shared<prim::SelectN>(), {all[0], all[2], all[1]});
}

Array select_n(const Array& which, const std::vector<Array>& cases) {
  std::vector<Array> in{which};
  in.insert(in.end(), cases.begin(), cases.end());
  return bind1(std::make_shared<prim::SelectN>(), in);
}

Array clamp(const ArrayLike& lo, const Array& x, const ArrayLike& hi) {
  std::vector<Array> v = promote({lo, x, hi}, "clamp");
  return bind1(std::make_shared<prim::Clamp>(), {convert(v[0], x.dtype(), x.type().weak), x,
                                                 convert(v[2], x.dtype(), x.type().weak)});
}

Array astype(const Array& x, DType dtype) {
  check_dtype(dtype, "astype");
  return convert(x, dtype, false);
}
// A same-dtype convert_element_type is an elementwise copy with every rule convert has
// (jvp, transpose, batching, unreduced operands), so copy binds it rather than its own.
Array copy(const Array& x) {
  return bind1(std::make_shared<prim::Convert>(x.dtype(), x.type().weak), {x});
}
Array convert_element_type(const Array& x, DType dtype, const ConvertOptions& o) {
  check_dtype(dtype, "convert_element_type");
  auto s = canonicalize_sharding(o.sharding, "convert_element_type");
  if (!s) return convert(x, dtype, o.weak);
  return bind1(std::make_shared<prim::Convert>(dtype, o.weak, s), {x});
}

Array operator-(const Array& x) { return neg(x); }
Array operator+(const ArrayLike& a, const ArrayLike& b) { return add(a, b); }
Array operator-(const ArrayLike& a, const ArrayLike& b) { return subtract(a, b); }
Array operator%(const ArrayLike& a, const ArrayLike& b) { return remainder(a, b); }
Array operator*(const ArrayLike& a, const ArrayLike& b) { return multiply(a, b); }
Array operator/(const ArrayLike& a, const ArrayLike& b) { return divide(a, b); }
Array operator<(const ArrayLike& a, const ArrayLike& b) { return less(a, b); }
Array operator<=(const ArrayLike& a, const ArrayLike& b) { return less_equal(a, b); }
Array operator>(const ArrayLike& a, const ArrayLike& b) { return greater(a, b); }
Array operator>=(const ArrayLike& a, const ArrayLike& b) { return greater_equal(a, b); }
Array operator&(const ArrayLike& a, const ArrayLike& b) { return bitwise_and(a, b); }
Array operator|(const ArrayLike& a, const ArrayLike& b) { return bitwise_or(a, b); }
Array operator^(const ArrayLike& a, const ArrayLike& b) { return bitwise_xor(a, b); }
Array operator!(const Array& x) { return logical_not(x); }

}  // namespace tsr
