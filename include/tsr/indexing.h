#pragma once
/** NumPy-style indexing, gather and scatter on sharded arrays (spec §12.13–§12.14).
 *
 *    Array row = x[1];                         // x[1]
 *    Array col = x[{all, 2}];                  // x[:, 2]
 *    Array sub = x[{Slice{1, std::nullopt, 2}, newaxis, ellipsis}];
 *    Array y = x.at(all, i).set(v);            // x.at[:, i].set(v)
 *    Array g = x.at(all, j).get({.out_sharding = typeof(i).sharding});
 *
 *  Reads with only static indices (ints, slices, newaxis, ellipsis) use slice /
 *  rev / squeeze in eager mode and under jit alike (spec §12.8 recommendation);
 *  index arrays use gather. Updates always use scatter. */
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <variant>
#include <vector>

#include "tsr/array.h"
#include "tsr/ops.h"

namespace tsr {

/** A basic slice start:stop:step; unset start/stop mean the ends (NumPy rules,
 *  negative values count from the end). */
struct Slice {
  std::optional<int64_t> start; /**< first element (default: the start in step's direction) */
  std::optional<int64_t> stop;  /**< one past the last (default: the end) */
  int64_t step = 1;             /**< stride; negative walks backwards; never 0 */
};

/** np.newaxis / None: inserts a size-1 dimension. */
struct NewAxis {};
/** NumPy's Ellipsis (`...`): as many `all` as needed. */
struct Ellipsis {};
/** Marker for np.newaxis. */
inline constexpr NewAxis newaxis{};
/** Marker for `...`. */
inline constexpr Ellipsis ellipsis{};

/** One index entry: an integer, a Slice, `all` (`:`), `newaxis`, `ellipsis`, or an
 *  integer index array (advanced indexing; arrays broadcast together). */
class Index {
 public:
  /** An integer index (negative counts from the end). */
  Index(int v) : v_(static_cast<int64_t>(v)) {}  // NOLINT: implicit by design
  /** An integer index. */
  Index(int64_t v) : v_(v) {}  // NOLINT
  /** Booleans are not indices: use where() for masks. */
  Index(bool) = delete;
  /** A slice. */
  Index(Slice s) : v_(s) {}  // NOLINT
  /** `:` — the whole dimension. */
  Index(AllFn) : v_(Slice{}) {}  // NOLINT
  /** A new size-1 axis. */
  Index(NewAxis n) : v_(n) {}  // NOLINT
  /** `...`. */
  Index(Ellipsis e) : v_(e) {}  // NOLINT
  /** An integer index array (any shape; rank 0 acts like a dynamic integer). */
  Index(const Array& a) : v_(a) {}  // NOLINT
  /** The alternatives. */
  const std::variant<int64_t, Slice, NewAxis, Ellipsis, Array>& value() const { return v_; }

 private:
  std::variant<int64_t, Slice, NewAxis, Ellipsis, Array> v_;
};

/** Out-of-bounds behaviour of gathers and scatters (JAX's GatherScatterMode). */
enum class IndexMode : uint8_t {
  FillOrDrop,      /**< default: out-of-bounds reads give fill_value, writes are dropped */
  Clip,            /**< indices are clamped into range */
  PromiseInBounds, /**< the caller promises in-range indices (reads clamp, writes drop) */
};

/** Options of a read: `x.at(...).get(o)`, gather, take. */
struct GetOptions {
  ShardingArg out_sharding = {}; /**< result sharding; needed when ambiguous (E12) */
  /** Out-of-bounds behaviour; unset = JAX's None: gathers fill, reads with only
   *  scalar index arrays use dynamic_slice (which clamps). */
  std::optional<IndexMode> mode = {};
  std::optional<double> fill_value = {}; /**< default NaN / INT_MIN / UINT_MAX / true */
  bool indices_are_sorted = false;       /**< hint; never changes the result */
  bool unique_indices = false;           /**< hint; never changes the result */
};

/** Options of an update: `x.at(...).set(v, o)` and friends, scatter. */
struct UpdateOptions {
  ShardingArg out_sharding = {};          /**< result sharding; needed when ambiguous (E13) */
  IndexMode mode = IndexMode::FillOrDrop; /**< out-of-bounds updates are dropped by default */
  bool indices_are_sorted = false;        /**< hint */
  bool unique_indices = false;            /**< hint */
};

/** The index expression of `x.at(...)`: a functional in-place update. */
class At {
 public:
  /** x and its index entries. */
  At(Array x, std::vector<Index> idx) : x_(std::move(x)), idx_(std::move(idx)) {}
  /** x[idx]. */
  Array get(const GetOptions& o = {}) const;
  /** x with x[idx] = v. Duplicate indices: the last update wins. */
  Array set(const ArrayLike& v, const UpdateOptions& o = {}) const;
  /** x with x[idx] += v (duplicates accumulate). */
  Array add(const ArrayLike& v, const UpdateOptions& o = {}) const;
  /** x with x[idx] -= v. */
  Array subtract(const ArrayLike& v, const UpdateOptions& o = {}) const;
  /** x with x[idx] *= v. */
  Array mul(const ArrayLike& v, const UpdateOptions& o = {}) const;
  /** x with x[idx] = minimum(x[idx], v). */
  Array min(const ArrayLike& v, const UpdateOptions& o = {}) const;
  /** x with x[idx] = maximum(x[idx], v). */
  Array max(const ArrayLike& v, const UpdateOptions& o = {}) const;
  /** x / ones_like(x).at[idx].mul(v) (JAX's .at[].divide: true division, so integer
   *  x gives a float result; duplicates divide repeatedly). */
  Array divide(const ArrayLike& v, const UpdateOptions& o = {}) const;
  /** x ** ones_like(x).at[idx].mul(v) (JAX's .at[].power). */
  Array power(const ArrayLike& v, const UpdateOptions& o = {}) const;
  /** x with f applied (elementwise) once to every indexed element. */
  Array apply(const std::function<Array(const Array&)>& f, const UpdateOptions& o = {}) const;

 private:
  Array x_;
  std::vector<Index> idx_;
};

/** x[idx] with NumPy semantics (see the file comment). */
Array index(const Array& x, const std::vector<Index>& idx, const GetOptions& o = {});

/** lax.GatherDimensionNumbers; the last dim of the indices is the index vector. */
struct GatherDimensionNumbers {
  std::vector<int> offset_dims;                 /**< output dims holding slice dims */
  std::vector<int> collapsed_slice_dims;        /**< operand dims of slice size 1 dropped */
  std::vector<int> start_index_map;             /**< index vector entry k -> operand dim */
  std::vector<int> operand_batching_dims;       /**< operand dims paired with ... */
  std::vector<int> start_indices_batching_dims; /**< ... these indices dims */
};

/** lax.ScatterDimensionNumbers; the last dim of the indices is the index vector. */
struct ScatterDimensionNumbers {
  std::vector<int> update_window_dims;            /**< update dims that are window dims */
  std::vector<int> inserted_window_dims;          /**< operand dims with window size 1 */
  std::vector<int> scatter_dims_to_operand_dims;  /**< index vector entry k -> operand dim */
  std::vector<int> operand_batching_dims;         /**< operand dims paired with ... */
  std::vector<int> scatter_indices_batching_dims; /**< ... these indices dims */
};

/** How a scatter combines an update with the operand. */
enum class ScatterKind : uint8_t { Set, Add, Sub, Mul, Min, Max };

/** lax.gather: slices of `operand` at the starts in `indices`. */
Array gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dims,
             const Shape& slice_sizes, const GetOptions& o = {});
/** lax.scatter / scatter_add / ...: operand with `updates` combined in at `indices`. */
Array scatter(ScatterKind kind, const Array& operand, const Array& indices, const Array& updates,
              const ScatterDimensionNumbers& dims, const UpdateOptions& o = {});

/** jnp.take: elements of a along `axis` (flattened when unset); default mode fill. */
Array take(const Array& a, const Array& indices, std::optional<int> axis = {},
           const GetOptions& o = {});
/** jnp.take_along_axis: a's elements at `indices` along axis (shapes broadcast). */
Array take_along_axis(const Array& a, const Array& indices, int axis, const GetOptions& o = {});
/** jax.nn.one_hot: x[..., None] == arange(n) as dtype, the new dim at `axis`. The
 *  default sharding is s(x) with None inserted; out_sharding may shard the new dim. */
Array one_hot(const Array& x, int64_t num_classes, DType dtype = float32, int axis = -1,
              const ShardingArg& out_sharding = {});
/** jnp.bincount with a static `length`: counts (or sums weights) of each value in
 *  [0, length); larger values are dropped, negative ones count in bin 0. out_sharding
 *  may only be fully replicated, P(), or fully unreduced over every mesh axis,
 *  P(Unreduced{{all axes}}): each device then counts its own part of x. */
Array bincount(const Array& x, int64_t length, const std::optional<Array>& weights = {},
               const ShardingArg& out_sharding = {});

/** Options of the segment reductions (jax.ops.segment_*). */
struct SegmentOptions {
  bool indices_are_sorted = false;        /**< hint; never changes the result */
  bool unique_indices = false;            /**< hint; never changes the result */
  IndexMode mode = IndexMode::FillOrDrop; /**< out-of-range ids are dropped by default */
  /** Result sharding: any layout (computed as a scatter with out_sharding); segment_sum
   *  also takes P(Unreduced{{all mesh axes}}), each device reducing its own part. */
  ShardingArg out_sharding = {};
};
/** jax.ops.segment_sum: out[s] = sum of data[i] with segment_ids[i] == s, for s in
 *  [0, num_segments); empty segments hold 0. */
Array segment_sum(const Array& data, const Array& segment_ids, int64_t num_segments,
                  const SegmentOptions& o = {});
/** jax.ops.segment_prod: products; empty segments hold 1. */
Array segment_prod(const Array& data, const Array& segment_ids, int64_t num_segments,
                   const SegmentOptions& o = {});
/** jax.ops.segment_max: maxima; empty segments hold -inf (integers: the lowest value,
 *  bool: false). */
Array segment_max(const Array& data, const Array& segment_ids, int64_t num_segments,
                  const SegmentOptions& o = {});
/** jax.ops.segment_min: minima; empty segments hold +inf (integers: the largest value,
 *  bool: true). */
Array segment_min(const Array& data, const Array& segment_ids, int64_t num_segments,
                  const SegmentOptions& o = {});

template <typename... I>
At Array::at(const I&... idx) const {
  return At(*this, std::vector<Index>{Index(idx)...});
}

}  // namespace tsr
