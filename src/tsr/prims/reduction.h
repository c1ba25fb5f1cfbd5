#pragma once
// Reductions over a set of axes, and argmax/argmin over one axis.
#include <optional>

#include "tsr/core/primitive.h"
#include "tsr/prims/op_codes.h"

namespace tsr::prim {
/** "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or". */
const char* reduce_name(ReduceKind k);

/** Reduces `axes` (sorted, distinct) away. Sum of float16/bfloat16 accumulates in
 *  float32. `out_sharding` (sum/max/min) may keep sharded axes unreduced. */
class Reduce : public detail::Primitive {
 public:
  /** Kind, axes and optional out_sharding (abstract). */
  Reduce(ReduceKind kind, std::vector<int> axes, std::optional<NamedSharding> out_sharding = {})
      : kind_(kind), axes_(std::move(axes)), out_sharding_(std::move(out_sharding)) {}
  /** Kind. */
  ReduceKind kind() const { return kind_; }
  /** Reduced axes, sorted. */
  const std::vector<int>& axes() const { return axes_; }
  const char* name() const override { return reduce_name(kind_); }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  ReduceKind kind_;
  std::vector<int> axes_;
  std::optional<NamedSharding> out_sharding_;
};

/** argmax / argmin over one axis; ties and NaNs give the first index (as JAX). */
class ArgReduce : public detail::Primitive {
 public:
  /** max=true for argmax. */
  ArgReduce(bool max, int axis, DType index_dtype)
      : max_(max), axis_(axis), index_dtype_(index_dtype) {}
  /** argmax? */
  bool is_max() const { return max_; }
  /** The reduced axis. */
  int axis() const { return axis_; }
  const char* name() const override { return max_ ? "argmax" : "argmin"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  bool max_;
  int axis_;
  DType index_dtype_;
};

}  // namespace tsr::prim
