#pragma once
// Convolutions: lax.conv_general_dilated and its front-ends conv,
// conv_with_general_padding and conv_transpose. Batch and output-feature shardings
// carry through; a sharded spatial dimension exchanges the window's overlap with its
// neighbours (halo exchange) instead of gathering the image (design 0022).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "tsr/ops.h"
#include "tsr/window.h"

namespace tsr {

/** lax.ConvDimensionNumbers: lhs and out as (batch, feature, spatial...), rhs as
 *  (out feature, in feature, spatial...), each a list of dimension indices. */
struct ConvDimensionNumbers {
  std::vector<int> lhs_spec; /**< lhs dims: batch, feature, spatial... */
  std::vector<int> rhs_spec; /**< rhs dims: out feature, in feature, spatial... */
  std::vector<int> out_spec; /**< out dims: batch, feature, spatial... */
  /** Equality. */
  bool operator==(const ConvDimensionNumbers&) const = default;
};

/** Dimension numbers as JAX takes them: none (NCHW / OIHW / NCHW order), three layout
 *  strings such as {"NHWC", "HWIO", "NHWC"}, or ConvDimensionNumbers. */
class ConvLayout {
 public:
  /** The default: dimensions in (batch, feature, spatial...) order everywhere. */
  ConvLayout() = default;
  /** Layout strings: N and C (lhs, out), O and I (rhs), spatial letters shared. */
  ConvLayout(std::string lhs, std::string rhs, std::string out)
      : names_{{std::move(lhs), std::move(rhs), std::move(out)}} {}
  /** Explicit dimension numbers. */
  ConvLayout(ConvDimensionNumbers dn) : dn_(std::move(dn)) {}  // NOLINT: implicit by design
  /** lax.conv_dimension_numbers for operands of these shapes (TypeError as JAX for a
   *  malformed layout). */
  ConvDimensionNumbers numbers(const Shape& lhs_shape, const Shape& rhs_shape) const;
  /** True for the default layout. */
  bool is_default() const { return !names_ && !dn_; }

 private:
  std::optional<std::array<std::string, 3>> names_;
  std::optional<ConvDimensionNumbers> dn_;
};

/** lax.conv_dimension_numbers: a layout resolved against operand shapes. */
ConvDimensionNumbers conv_dimension_numbers(const Shape& lhs_shape, const Shape& rhs_shape,
                                            const ConvLayout& layout);

/** Optional parameters of conv_general_dilated (empty dilations: ones). */
struct ConvOptions {
  Shape lhs_dilation = {};                          /**< transposed convolution */
  Shape rhs_dilation = {};                          /**< atrous convolution */
  ConvLayout dimension_numbers = {};                /**< layouts */
  int64_t feature_group_count = 1;                  /**< grouped / depthwise convolution */
  int64_t batch_group_count = 1;                    /**< grouped filter gradients */
  std::optional<DType> preferred_element_type = {}; /**< accumulation and result dtype */
  ShardingArg out_sharding = {}; /**< result sharding (needed when rhs is sharded) */
};

/** lax.conv_general_dilated: an n-d convolution of lhs (rank n + 2) with the kernel rhs;
 *  padding "VALID", "SAME", "SAME_LOWER" or (lo, hi) pairs per spatial dim. */
Array conv_general_dilated(const Array& lhs, const Array& rhs, const Shape& window_strides,
                           const Padding& padding, const ConvOptions& o = {});

/** lax.conv: conv_general_dilated with default layouts and no dilation. */
Array conv(const Array& lhs, const Array& rhs, const Shape& window_strides, const Padding& padding,
           std::optional<DType> preferred_element_type = {});

/** lax.conv_with_general_padding: conv with dilations and explicit or named padding. */
Array conv_with_general_padding(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                const Padding& padding, const Shape& lhs_dilation,
                                const Shape& rhs_dilation,
                                std::optional<DType> preferred_element_type = {});

/** Optional parameters of conv_transpose. */
struct ConvTransposeOptions {
  Shape rhs_dilation = {};           /**< atrous convolution */
  ConvLayout dimension_numbers = {}; /**< default: NHWC / HWIO / NHWC by rank */
  bool transpose_kernel = false;     /**< flip and swap I/O as TF's Conv2DTranspose */
  std::optional<DType> preferred_element_type = {}; /**< accumulation and result dtype */
  bool use_consistent_padding = false;              /**< pairs are the forward conv's padding */
};

/** lax.conv_transpose: the fractionally strided convolution (gradient-shaped output). */
Array conv_transpose(const Array& lhs, const Array& rhs, const Shape& strides,
                     const Padding& padding, const ConvTransposeOptions& o = {});

}  // namespace tsr
