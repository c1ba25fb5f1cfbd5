#pragma once
// Op code -> scalar function (scalar_ops.h), for the kernels of every platform: the
// CPU loops, the CUDA kernels and the fused CUDA kernels NVRTC compiles. T is bool,
// an integer type, float or double; the half types compute in float.
#include "tsr/backends/common/scalar_ops.h"
#include "tsr/prims/elementwise_ops.h"

namespace tsr::detail {

/** The result type of a unary op on T (bool for is_finite). */
template <prim::UnaryOp Op, typename T>
struct UnaryResult {
  using type = T;
};
template <typename T>
struct UnaryResult<prim::UnaryOp::IsFinite, T> {
  using type = bool;
};

/** True for the comparisons, whose result is bool. */
TSR_HD constexpr bool is_compare_op(prim::BinaryOp op) { return op >= prim::BinaryOp::Eq; }

/** The result type of a binary op on T (bool for the comparisons). */
template <prim::BinaryOp Op, typename T, bool Cmp = is_compare_op(Op)>
struct BinaryResult {
  using type = T;
};
template <prim::BinaryOp Op, typename T>
struct BinaryResult<Op, T, true> {
  using type = bool;
};

/** True for the unary ops defined only on floating types. */
TSR_HD constexpr bool unary_float_only(prim::UnaryOp op) {
  using U = prim::UnaryOp;
  return !(op == U::Neg || op == U::Abs || op == U::Sign || op == U::Floor || op == U::Ceil ||
           op == U::Round || op == U::Square || op == U::Not);
}
/** True for and / or / xor. */
TSR_HD constexpr bool is_logical_op(prim::BinaryOp op) {
  return op == prim::BinaryOp::And || op == prim::BinaryOp::Or || op == prim::BinaryOp::Xor;
}
/** Whether the unary op is defined on T (bool, an integer, float or double); the
 *  kernels instantiate only these pairs. */
template <prim::UnaryOp Op, typename T>
TSR_HD constexpr bool unary_accepts() {
  if constexpr (ops::Traits<T>::kBool) return Op == prim::UnaryOp::Not;
  if constexpr (ops::Traits<T>::kInt) return !unary_float_only(Op);
  return Op != prim::UnaryOp::Not;
}
/** Whether the binary op is defined on T (bool, an integer, float or double). */
template <prim::BinaryOp Op, typename T>
TSR_HD constexpr bool binary_accepts() {
  using B = prim::BinaryOp;
  if constexpr (ops::Traits<T>::kBool)
    return is_compare_op(Op) || is_logical_op(Op) || Op == B::Add || Op == B::Mul || Op == B::Max ||
           Op == B::Min;
  if constexpr (ops::Traits<T>::kInt) return Op != B::Atan2;
  return !is_logical_op(Op);
}

/** op(x). Only the (op, type) pairs the primitive's rule accepts are instantiated. */
template <prim::UnaryOp Op, typename T>
TSR_HD typename UnaryResult<Op, T>::type unary_apply(T x) {
  using U = prim::UnaryOp;
  if constexpr (Op == U::Neg) return ops::neg(x);
  if constexpr (Op == U::Abs) return ops::abs(x);
  if constexpr (Op == U::Sign) return ops::sign(x);
  if constexpr (Op == U::Floor) return ops::floor(x);
  if constexpr (Op == U::Ceil) return ops::ceil(x);
  if constexpr (Op == U::Round) return ops::round(x);
  if constexpr (Op == U::Square) return ops::square(x);
  if constexpr (Op == U::Not) return ops::not_(x);
  if constexpr (!ops::Traits<T>::kInt && !ops::Traits<T>::kBool) {
    if constexpr (Op == U::Exp) return ops::exp(x);
    if constexpr (Op == U::Exp2) return ops::exp2(x);
    if constexpr (Op == U::Log) return ops::log(x);
    if constexpr (Op == U::Log1p) return ops::log1p(x);
    if constexpr (Op == U::Expm1) return ops::expm1(x);
    if constexpr (Op == U::Sqrt) return ops::sqrt(x);
    if constexpr (Op == U::Rsqrt) return ops::rsqrt(x);
    if constexpr (Op == U::Sin) return ops::sin(x);
    if constexpr (Op == U::Cos) return ops::cos(x);
    if constexpr (Op == U::Tan) return ops::tan(x);
    if constexpr (Op == U::Tanh) return ops::tanh(x);
    if constexpr (Op == U::Logistic) return ops::logistic(x);
    if constexpr (Op == U::Erf) return ops::erf(x);
    if constexpr (Op == U::ErfInv) return ops::erf_inv(x);
    if constexpr (Op == U::IsFinite) return ops::is_finite(x);
  }
  return static_cast<typename UnaryResult<Op, T>::type>(x);
}

/** op(x, y). Only the (op, type) pairs the primitive's rule accepts are instantiated. */
template <prim::BinaryOp Op, typename T>
TSR_HD typename BinaryResult<Op, T>::type binary_apply(T x, T y) {
  using B = prim::BinaryOp;
  if constexpr (Op == B::Add) return ops::add(x, y);
  if constexpr (Op == B::Sub) return ops::sub(x, y);
  if constexpr (Op == B::Mul) return ops::mul(x, y);
  if constexpr (Op == B::Div) return ops::div(x, y);
  if constexpr (Op == B::Rem) return ops::rem(x, y);
  if constexpr (Op == B::Pow) return ops::pow(x, y);
  if constexpr (Op == B::Max) return ops::max(x, y);
  if constexpr (Op == B::Min) return ops::min(x, y);
  if constexpr (Op == B::Atan2) return ops::atan2(x, y);
  if constexpr (Op == B::And) return ops::and_(x, y);
  if constexpr (Op == B::Or) return ops::or_(x, y);
  if constexpr (Op == B::Xor) return ops::xor_(x, y);
  if constexpr (Op == B::Eq) return ops::eq(x, y);
  if constexpr (Op == B::Ne) return ops::ne(x, y);
  if constexpr (Op == B::Lt) return ops::lt(x, y);
  if constexpr (Op == B::Le) return ops::le(x, y);
  if constexpr (Op == B::Gt) return ops::gt(x, y);
  if constexpr (Op == B::Ge) return ops::ge(x, y);
  return static_cast<typename BinaryResult<Op, T>::type>(x);
}

}  // namespace tsr::detail
