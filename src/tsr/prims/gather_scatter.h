#pragma once
// gather and the scatter family (spec §12.13–§12.14). Kernels work in global
// coordinates: each device computes its output block from whatever input blocks
// `partition` made local, so any output layout is computable.
#include <optional>

#include "tsr/core/primitive.h"
#include "tsr/indexing.h"

namespace tsr::prim {

/** True when v contains x (dimension lists are short). */
bool has_dim(const std::vector<int>& v, int x);
/** The dims of [0, rank) in neither a nor b, increasing: a gather's window dims
 *  (not collapsed, not batching), a scatter's update scatter dims. */
std::vector<int> dims_except(int rank, const std::vector<int>& a, const std::vector<int>& b);

/** lax.gather with dimension numbers, slice sizes, mode and an optional out_sharding. */
class Gather : public detail::Primitive {
 public:
  /** Parameters; fill is used by IndexMode::FillOrDrop. */
  Gather(GatherDimensionNumbers dims, Shape slice_sizes, IndexMode mode, double fill, bool sorted,
         bool unique, std::optional<NamedSharding> out_sharding)
      : dims_(std::move(dims)),
        slice_sizes_(std::move(slice_sizes)),
        mode_(mode),
        fill_(fill),
        sorted_(sorted),
        unique_(unique),
        out_sharding_(std::move(out_sharding)) {}
  /** Dimension numbers. */
  const GatherDimensionNumbers& dims() const { return dims_; }
  /** Slice sizes (one per operand dim). */
  const Shape& slice_sizes() const { return slice_sizes_; }
  /** Out-of-bounds mode. */
  IndexMode mode() const { return mode_; }
  /** Fill value for out-of-bounds slices. */
  double fill() const { return fill_; }
  const char* name() const override { return "gather"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  bool needs_input_origins() const override { return true; }

 private:
  GatherDimensionNumbers dims_;
  Shape slice_sizes_;
  IndexMode mode_;
  double fill_;
  bool sorted_, unique_;
  std::optional<NamedSharding> out_sharding_;
};

/** lax.scatter / scatter_add / scatter_sub / scatter_mul / scatter_min / scatter_max. */
class Scatter : public detail::Primitive {
 public:
  /** Parameters. */
  Scatter(ScatterKind kind, ScatterDimensionNumbers dims, IndexMode mode, bool sorted, bool unique,
          std::optional<NamedSharding> out_sharding)
      : kind_(kind),
        dims_(std::move(dims)),
        mode_(mode),
        sorted_(sorted),
        unique_(unique),
        out_sharding_(std::move(out_sharding)) {}
  /** How updates combine. */
  ScatterKind kind() const { return kind_; }
  /** Dimension numbers. */
  const ScatterDimensionNumbers& dims() const { return dims_; }
  /** Out-of-bounds mode. */
  IndexMode mode() const { return mode_; }
  /** The indices_are_sorted hint. */
  bool sorted() const { return sorted_; }
  /** The unique_indices hint. */
  bool unique() const { return unique_; }
  const char* name() const override;
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  bool needs_input_origins() const override { return true; }

 private:
  ScatterKind kind_;
  ScatterDimensionNumbers dims_;
  IndexMode mode_;
  bool sorted_, unique_;
  std::optional<NamedSharding> out_sharding_;
};

/** x's elements at `idx` along `dim` (take_along_axis without broadcasting): idx has
 *  x's shape except along dim, and the result is typed `out` (sharding included).
 *  The jvps of sort and top_k route tangents through their permutation with it. */
Array gather_along(const Array& x, const Array& idx, int dim, const ArrayType& out);

}  // namespace tsr::prim
