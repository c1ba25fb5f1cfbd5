#pragma once
// bitcast_convert_type: the same bytes read as another dtype (lax semantics).
#include "tsr/core/primitive.h"

namespace tsr::prim {

/** lax.bitcast_convert_type: same width keeps the shape; a narrower dtype adds a
 *  trailing dim of the width ratio; a wider one removes a last dim equal to it.
 *  The added/removed dim is never sharded, so each device reinterprets its block. */
class BitcastConvertType : public detail::Primitive {
 public:
  /** The target dtype. */
  explicit BitcastConvertType(DType dtype) : dtype_(dtype) {}
  /** The target dtype. */
  DType dtype() const { return dtype_; }
  const char* name() const override { return "bitcast_convert_type"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  DType dtype_;
};

}  // namespace tsr::prim
