#pragma once
// Elementwise primitives: unary, binary (same rank, size-1 dims broadcast),
// select_n, clamp, convert_element_type, integer_pow.
#include <cstdint>
#include <optional>

#include "tsr/core/primitive.h"
#include "tsr/prims/elementwise_ops.h"

namespace tsr::prim {

/** The primitive name of a unary op ("neg", ..., "is_finite", "not", "erf_inv"). */
const char* unary_name(UnaryOp op);

/** y = op(x). Output dtype = input dtype (bool for is_finite). `round` rounds half
 *  to even (jnp.round). */
class Unary : public detail::Primitive {
 public:
  /** The op. */
  explicit Unary(UnaryOp op) : op_(op) {}
  /** Which op. */
  UnaryOp op() const { return op_; }
  const char* name() const override { return unary_name(op_); }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;

 private:
  UnaryOp op_;
};

/** x ** y for a static integer y (integer_pow). */
class IntegerPow : public detail::Primitive {
 public:
  /** The exponent. */
  explicit IntegerPow(int y) : y_(y) {}
  /** The exponent. */
  int y() const { return y_; }
  const char* name() const override { return "integer_pow"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  std::string params() const override { return "y=" + std::to_string(y_); }

 private:
  int y_;
};

/** The primitive name ("add", ..., "ge"). */
const char* binary_name(BinaryOp op);
/** True for eq/ne/lt/le/gt/ge (bool result). */
bool is_comparison(BinaryOp op);

/** z = op(x, y): equal dtypes, equal ranks (or a rank-0 operand), size-1 dims
 *  broadcast. Integer div/rem truncate toward zero (lax.div/rem). */
class Binary : public detail::Primitive {
 public:
  /** The op. */
  explicit Binary(BinaryOp op) : op_(op) {}
  /** Which op. */
  BinaryOp op() const { return op_; }
  const char* name() const override { return binary_name(op_); }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;

 private:
  BinaryOp op_;
};

/** Spec §9's unreduced / reduced sets of a binary op's result (ShardingTypeError when
 *  the operands' sets do not combine under op). */
PartitionSpec binary_unreduced_sets(const char* name, BinaryOp op,
                                    const std::vector<ArrayType>& in);

/** select_n(which, case0, case1, ...): which is bool (2 cases) or int32. */
class SelectN : public detail::Primitive {
 public:
  const char* name() const override { return "select_n"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
};

/** clamp(lo, x, hi); lo and hi are rank 0 or shaped like x. */
class Clamp : public detail::Primitive {
 public:
  const char* name() const override { return "clamp"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
};

/** convert_element_type: new dtype (and weak flag); sharding unchanged unless
 *  `sharding` is given (then the output has it). An unreduced value keeps its
 *  unreduced axes only for float -> float conversions, which commute with the
 *  reduction up to rounding. */
class Convert : public detail::Primitive {
 public:
  /** Target dtype, weak flag and optional output sharding (abstract). */
  Convert(DType dtype, bool weak, std::optional<NamedSharding> sharding = {})
      : dtype_(dtype), weak_(weak), sharding_(std::move(sharding)) {}
  /** Target dtype. */
  DType dtype() const { return dtype_; }
  const char* name() const override { return "convert_element_type"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  DType dtype_;
  bool weak_;
  std::optional<NamedSharding> sharding_;
};

}  // namespace tsr::prim

namespace tsr::detail {
/** Spec §12.4's rule for same-rank (or rank-0) operands: output entries, and the
 *  broadcast shape in `out_shape`. E1 on conflicting shardings. */
std::vector<PartitionEntry> broadcast_entries(const char* name, const std::vector<ArrayType>& in,
                                              Shape& out_shape);
}  // namespace tsr::detail
