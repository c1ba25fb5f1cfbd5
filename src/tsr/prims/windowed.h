#pragma once
// Windowed reductions (lax.reduce_window_{sum,max,min}) and the max/min-pooling
// derivative primitives select_and_gather_add / select_and_scatter_add (spec §12.15).
#include <utility>
#include <vector>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** A window over every dimension: sizes, strides, (lo, hi) padding, dilations. */
struct Window {
  std::vector<int64_t> dims;                        /**< window_dimensions */
  std::vector<int64_t> strides;                     /**< window_strides */
  std::vector<std::pair<int64_t, int64_t>> padding; /**< (lo, hi) per dim */
  std::vector<int64_t> base_dilation;               /**< holes between operand elements */
  std::vector<int64_t> window_dilation;             /**< holes between window taps */
  /** The output shape over an operand of `in` (JAX's reduce_window_shape_tuple). */
  Shape out_shape(const Shape& in) const;
  /** True where dimension d is touched by the window (not a size-1, stride-1, unpadded,
   *  undilated pass-through): such a dimension must be whole on the kernel. */
  std::vector<bool> windowed() const;
  /** The window with a new leading pass-through dimension (batching rules). */
  Window with_leading_dim() const;
  /** Parameters as JAX prints them. */
  std::string params() const;
  /** Equal windows. */
  bool operator==(const Window&) const = default;
};

/** Which monoid a windowed reduction uses (and which element a select picks). */
enum class WindowOp : uint8_t { Sum, Max, Min };

/** lax.reduce_window_sum_p / max_p / min_p: each output element reduces its window of
 *  the operand (padding and base-dilation holes hold the monoid's identity). */
class ReduceWindow : public detail::Primitive {
 public:
  /** The monoid and the window. */
  ReduceWindow(WindowOp op, Window w) : op_(op), w_(std::move(w)) {}
  /** The monoid. */
  WindowOp op() const { return op_; }
  /** The window. */
  const Window& window() const { return w_; }
  const char* name() const override;
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override { return w_.params(); }
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  WindowOp op_;
  Window w_;
};

/** lax's select_and_gather_add_p(tangent, operand): per window of the operand, the
 *  tangent at the element a max (or min) reduction selects (the first on ties; padding
 *  is never selected over a real element). The jvp of reduce_window_max / min. */
class SelectAndGatherAdd : public detail::Primitive {
 public:
  /** Max (ge) or min (le) selection, and the window. */
  SelectAndGatherAdd(WindowOp select, Window w) : select_(select), w_(std::move(w)) {}
  /** Max or Min. */
  WindowOp select() const { return select_; }
  /** The window. */
  const Window& window() const { return w_; }
  const char* name() const override { return "select_and_gather_add"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  WindowOp select_;
  Window w_;
};

/** lax's select_and_scatter_add_p(source, operand): zeros shaped like the operand, with
 *  each window's source value added at the element the selection picks (max pooling's
 *  gradient). Transpose of select_and_gather_add. */
class SelectAndScatterAdd : public detail::Primitive {
 public:
  /** Max (ge) or min (le) selection, and the window. */
  SelectAndScatterAdd(WindowOp select, Window w) : select_(select), w_(std::move(w)) {}
  /** Max or Min. */
  WindowOp select() const { return select_; }
  /** The window. */
  const Window& window() const { return w_; }
  const char* name() const override { return "select_and_scatter_add"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  WindowOp select_;
  Window w_;
};

}  // namespace tsr::prim
