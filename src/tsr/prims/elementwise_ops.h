#pragma once
// The unary and binary elementwise op codes, apart from their primitives so that the
// CUDA kernels and the fused kernels NVRTC compiles can name them (core/hd.h).
#include "tsr/core/hd.h"

namespace tsr::prim {

/** Unary elementwise operations (one primitive name each). */
enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  Sign,
  Floor,
  Ceil,
  Round,
  Exp,
  Exp2,
  Log,
  Log1p,
  Expm1,
  Sqrt,
  Rsqrt,
  Square,
  Sin,
  Cos,
  Tan,
  Tanh,
  Logistic,
  Erf,
  IsFinite,
  Not,
  ErfInv,
};
/** Number of UnaryOp values. */
inline constexpr int kNumUnaryOps = 23;
/** Binary elementwise operations. */
enum class BinaryOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Pow,
  Max,
  Min,
  Atan2,
  And,
  Or,
  Xor,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
};
/** Number of BinaryOp values. */
inline constexpr int kNumBinaryOps = 18;
}  // namespace tsr::prim
