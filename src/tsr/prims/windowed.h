#pragma once
// Windowed reductions (lax.reduce_window_{sum,max,min}) and the max/min-pooling
// derivative primitives select_and_gather_add / select_and_scatter_add (spec §12.15).
#include <utility>
#include <vector>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** A size n spread by dilation d (d - 1 holes between elements): 1 + d (n - 1), or 0. */
inline int64_t dilated_size(int64_t n, int64_t d) { return n == 0 ? 0 : 1 + d * (n - 1); }

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

/** What select_and_gather_add and select_and_scatter_add share: a max (ge) or min (le)
 *  selection over the operand's windows (operand 1), linear in operand 0; each is the
 *  other's transpose. */
class WindowSelect : public detail::Primitive {
 public:
  /** Max (ge) or min (le) selection, and the window. */
  WindowSelect(WindowOp select, Window w) : select_(select), w_(std::move(w)) {}
  /** Max or Min. */
  WindowOp select() const { return select_; }
  /** The window. */
  const Window& window() const { return w_; }
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 protected:
  /** The same primitive over another window (batching adds a leading dimension). */
  virtual detail::PrimPtr with_window(Window w) const = 0;
  /** The primitive whose transpose this one is (gather <-> scatter), same window. */
  virtual detail::PrimPtr transposed() const = 0;
  /** Checks operand 0's shape and dtype against the selecting operand's window. */
  void check(const ArrayType& a, const ArrayType& x, const Shape& a_shape) const;

  WindowOp select_;
  Window w_;
};

/** lax's select_and_gather_add_p(tangent, operand): per window of the operand, the
 *  tangent at the element a max (or min) reduction selects (the first on ties; padding
 *  is never selected over a real element). The jvp of reduce_window_max / min. */
class SelectAndGatherAdd final : public WindowSelect {
 public:
  using WindowSelect::WindowSelect;
  const char* name() const override { return "select_and_gather_add"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;

 protected:
  detail::PrimPtr with_window(Window w) const override;
  detail::PrimPtr transposed() const override;
};

/** lax's select_and_scatter_add_p(source, operand): zeros shaped like the operand, with
 *  each window's source value added at the element the selection picks (max pooling's
 *  gradient). Transpose of select_and_gather_add. */
class SelectAndScatterAdd final : public WindowSelect {
 public:
  using WindowSelect::WindowSelect;
  const char* name() const override { return "select_and_scatter_add"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;

 protected:
  detail::PrimPtr with_window(Window w) const override;
  detail::PrimPtr transposed() const override;
};

}  // namespace tsr::prim
