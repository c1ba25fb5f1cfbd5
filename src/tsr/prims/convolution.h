#pragma once
// lax.conv_general_dilated_p: the one convolution primitive (spec §12.15). Its
// transposes are convolutions too (lax/convolution.py's transpose rules), so input and
// filter gradients run through the same rule and kernel.
#include <optional>
#include <utility>
#include <vector>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** lax.ConvDimensionNumbers: for lhs and out (batch, feature, spatial...), for rhs
 *  (out feature, in feature, spatial...); spatial dims listed in rhs's order. */
struct ConvDims {
  std::vector<int> lhs, rhs, out; /**< lhs_spec, rhs_spec, out_spec */
  /** Equality. */
  bool operator==(const ConvDims&) const = default;
};

/** Everything but the operands and the output's dtype and sharding. */
struct ConvParams {
  std::vector<int64_t> strides;                     /**< window_strides */
  std::vector<std::pair<int64_t, int64_t>> padding; /**< (lo, hi) per spatial dim; may be < 0 */
  std::vector<int64_t> lhs_dilation;                /**< transposed convolution */
  std::vector<int64_t> rhs_dilation;                /**< atrous convolution */
  ConvDims dn;                                      /**< dimension numbers */
  int64_t feature_group_count = 1;                  /**< grouped / depthwise */
  int64_t batch_group_count = 1;                    /**< grouped filter gradients */
  /** The result's shape (JAX's _conv_general_dilated_shape_rule, checks done). */
  Shape out_shape(const Shape& lhs, const Shape& rhs) const;
  /** Equality. */
  bool operator==(const ConvParams&) const = default;
};

/** lax.conv_general_dilated_p(lhs, rhs): out[n, o, y...] = sum over c, k... of
 *  lhs[n, c, y * stride + k * rhs_dilation - pad_lo] (lhs dilated by lhs_dilation)
 *  * rhs[o, c, k...], per feature (or batch) group. Bilinear. */
class ConvGeneralDilated : public detail::Primitive {
 public:
  /** Parameters, optional out_sharding (abstract) and the preferred output dtype. */
  ConvGeneralDilated(ConvParams p, std::optional<NamedSharding> out_sharding,
                     std::optional<DType> preferred)
      : p_(std::move(p)), out_sharding_(std::move(out_sharding)), preferred_(preferred) {}
  /** The parameters. */
  const ConvParams& params_of() const { return p_; }
  /** The declared output sharding, if any. */
  const std::optional<NamedSharding>& out_sharding() const { return out_sharding_; }
  /** preferred_element_type, if given. */
  std::optional<DType> preferred() const { return preferred_; }
  const char* name() const override { return "conv_general_dilated"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  ConvParams p_;
  std::optional<NamedSharding> out_sharding_;
  std::optional<DType> preferred_;
};

}  // namespace tsr::prim
