#pragma once
// dot_general: contraction with batch dimensions; GEMM on the CPU via OpenBLAS.
#include <optional>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** Contracting and batch dimension numbers of dot_general. */
struct DotDims {
  std::vector<int> lhs_contract, rhs_contract; /**< contracted pairs */
  std::vector<int> lhs_batch, rhs_batch;       /**< batch pairs */
  /** Equality. */
  bool operator==(const DotDims&) const = default;
};

/** The dims of a rank-`rank` operand that are neither contracted nor batch, in order
 *  (dot_general's free dims; the kernels' GEMM view uses the same). */
std::vector<int> dot_free_dims(int rank, const std::vector<int>& contract,
                               const std::vector<int>& batch);

/** out[batch..., lhs free..., rhs free...] = sum over contracted dims of lhs * rhs.
 *  Inputs share one dtype; the output has `out_dtype`. */
class DotGeneral : public detail::Primitive {
 public:
  /** Dimension numbers, optional out_sharding (abstract) and the output dtype. */
  DotGeneral(DotDims dims, std::optional<NamedSharding> out_sharding, DType out_dtype)
      : dims_(std::move(dims)), out_sharding_(std::move(out_sharding)), out_dtype_(out_dtype) {}
  /** Dimension numbers. */
  const DotDims& dims() const { return dims_; }
  const char* name() const override { return "dot_general"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  DotDims dims_;
  std::optional<NamedSharding> out_sharding_;
  DType out_dtype_;
};

}  // namespace tsr::prim
