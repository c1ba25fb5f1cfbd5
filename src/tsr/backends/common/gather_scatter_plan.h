#pragma once
// The index arithmetic of gather and scatter, shared by the CPU and CUDA kernels:
// where a gather's slice starts in the operand for one batch position, where a
// scatter's update window starts for one scatter position (and where one update
// element lands), and how a scatter combines an update with the operand element.
// Plain structs with fixed arrays, so a plan travels to a GPU kernel by value; the
// host builds them from the primitive (gather_scatter_build.h). Blocks are local:
// the origins turn the global indices into local offsets.
#include "tsr/backends/common/scalar_ops.h"
#include "tsr/dtype.h"

namespace tsr::detail {

/** The most dims an operand, indices or update array of a CUDA gather / scatter has
 *  (the plans travel as kernel parameters). */
constexpr int kIndexingMaxDims = 16;
/** The CPU kernels' limit (their plans live on the host stack). */
constexpr int kCpuIndexingMaxDims = 64;

/** Element i of an index array of integer dtype t (or bool) as int64; uint64 wraps,
 *  as convert does. */
TSR_HD int64_t load_index(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::Int32:
      return static_cast<const int32_t*>(base)[i];
    case DType::Int64:
      return static_cast<const int64_t*>(base)[i];
    case DType::Int8:
      return static_cast<const int8_t*>(base)[i];
    case DType::Int16:
      return static_cast<const int16_t*>(base)[i];
    case DType::UInt8:
      return static_cast<const uint8_t*>(base)[i];
    case DType::UInt16:
      return static_cast<const uint16_t*>(base)[i];
    case DType::UInt32:
      return static_cast<const uint32_t*>(base)[i];
    case DType::UInt64:
      return static_cast<int64_t>(static_cast<const uint64_t*>(base)[i]);
    default:  // bool (the rules admit integer indices only)
      return static_cast<const bool*>(base)[i] ? 1 : 0;
  }
}

/** A gather on local blocks: the slice start of each batch position, and the output's
 *  layout (batch dims and window dims) for a kernel that walks output elements; arrays
 *  of N entries. */
template <int N>
struct GatherPlanT {
  static constexpr int K = N;       /**< array capacity */
  int nb = 0;                       /**< batch dims (indices dims but the last) */
  int nv = 0;                       /**< index vector entries */
  int nob = 0;                      /**< operand batching dims */
  int orank = 0;                    /**< operand dims */
  int out_rank = 0;                 /**< output dims */
  int nw = 0;                       /**< window (offset) dims */
  DType index_dtype = DType::Int32; /**< the indices' dtype */
  bool fill = false;                /**< FillOrDrop: an out-of-bounds start reads the fill value */
  int64_t vstride = 1;              /**< the index vector's element stride in the indices */
  int64_t idx_stride[K] = {};       /**< per batch dim: the indices' element stride */
  int64_t idx_shift[K] = {};        /**< per batch dim: output origin - indices origin */
  int start_dim[K] = {};            /**< per vector entry: the operand dim it starts */
  int64_t start_hi[K] = {};         /**< per vector entry: the largest in-bounds start */
  int batch_dim[K] = {};            /**< per operand batching dim: the operand dim */
  int batch_k[K] = {};              /**< ... its batch dim (indices-dim order) */
  int64_t batch_shift[K] = {};      /**< ... the output origin along that batch dim */
  int64_t op_stride[K] = {};        /**< operand block: row-major element strides */
  int64_t op_origin[K] = {};        /**< operand block: global origin */
  int64_t base = 0;                 /**< operand offset of the output block's window origin */
  int64_t out_size[K] = {};         /**< output block: sizes */
  int batch_out_dim[K] = {};        /**< per batch dim: its output dim */
  int window_out_dim[K] = {};       /**< per window dim: its output dim (offset_dims) */
  int64_t window_stride[K] = {};    /**< per window dim: the operand element stride */
};

/** The operand element offset (local block) where the slice of batch position `bl`
 *  starts (bl: the output block's coordinates along the batch dims, in indices-dim
 *  order), or -1 when FillOrDrop finds a start out of bounds. Starts clamp into
 *  range otherwise (Clip, PromiseInBounds). */
template <int N>
TSR_HD int64_t gather_slice_offset(const GatherPlanT<N>& p, const int64_t* bl, const void* ind) {
  int64_t ioff = 0;
  for (int k = 0; k < p.nb; ++k) ioff += (bl[k] + p.idx_shift[k]) * p.idx_stride[k];
  int64_t start[N] = {};
  for (int v = 0; v < p.nv; ++v) {
    int64_t s = load_index(ind, p.index_dtype, ioff + v * p.vstride);
    int64_t hi = p.start_hi[v];
    if (p.fill && (s < 0 || s > hi)) return -1;
    if (hi < 0) hi = 0;
    start[p.start_dim[v]] = s < 0 ? 0 : (s > hi ? hi : s);
  }
  for (int i = 0; i < p.nob; ++i) start[p.batch_dim[i]] = bl[p.batch_k[i]] + p.batch_shift[i];
  int64_t off = p.base;
  for (int d = 0; d < p.orank; ++d) off += (start[d] - p.op_origin[d]) * p.op_stride[d];
  return off;
}

/** A scatter on local blocks: each scatter position's window start in the operand,
 *  and where an update element lands in the output block; arrays of N entries. */
template <int N>
struct ScatterPlanT {
  static constexpr int K = N;       /**< array capacity */
  int ns = 0;                       /**< scatter dims of the updates */
  int nv = 0;                       /**< index vector entries */
  int nob = 0;                      /**< operand batching dims */
  int orank = 0;                    /**< operand (= output) dims */
  int urank = 0;                    /**< update dims */
  int nw = 0;                       /**< window dims */
  DType index_dtype = DType::Int32; /**< the indices' dtype */
  bool clip = false;                /**< Clip: starts clamp into range; else out of range drops */
  int64_t vstride = 1;              /**< the index vector's element stride in the indices */
  int scatter_udim[K] = {};         /**< per scatter dim: its update dim */
  int64_t scatter_size[K] = {};     /**< per scatter dim: the update block's extent */
  int64_t idx_stride[K] = {};       /**< per scatter dim: the indices' element stride */
  int64_t idx_shift[K] = {};        /**< per scatter dim: update origin - indices origin */
  int start_dim[K] = {};            /**< per vector entry: the operand dim it starts */
  int64_t start_hi[K] = {};         /**< per vector entry: the largest in-bounds start */
  int batch_dim[K] = {};            /**< per operand batching dim: the operand dim */
  int batch_k[K] = {};              /**< ... its scatter dim */
  int64_t batch_shift[K] = {};      /**< ... the update origin along that scatter dim */
  int64_t out_size[K] = {};         /**< output block: sizes */
  int64_t out_origin[K] = {};       /**< output block: global origin */
  int64_t out_stride[K] = {};       /**< output block: row-major element strides */
  bool windowed[K] = {};            /**< per operand dim: a window dim */
  int window_odim[K] = {};          /**< per window dim: the operand dim */
  int window_udim[K] = {};          /**< per window dim: the update dim */
  int64_t window_origin[K] = {};    /**< per window dim: the update block's origin along it */
  int64_t upd_size[K] = {};         /**< update block: sizes */
};

/** The operand start (global, per operand dim) of scatter position `sl` (the update
 *  block's coordinates along the scatter dims); false when an out-of-range index
 *  drops the whole window (XLA semantics; Clip clamps instead). */
template <int N>
TSR_HD bool scatter_start(const ScatterPlanT<N>& p, const int64_t* sl, const void* ind,
                          int64_t* start) {
  int64_t ioff = 0;
  for (int k = 0; k < p.ns; ++k) ioff += (sl[k] + p.idx_shift[k]) * p.idx_stride[k];
  for (int d = 0; d < p.orank; ++d) start[d] = 0;
  for (int v = 0; v < p.nv; ++v) {
    int64_t s = load_index(ind, p.index_dtype, ioff + v * p.vstride);
    int64_t hi = p.start_hi[v];
    if (p.clip) {
      if (hi < 0) hi = 0;
      s = s < 0 ? 0 : (s > hi ? hi : s);
    } else if (s < 0 || s > hi) {
      return false;
    }
    start[p.start_dim[v]] = s;
  }
  for (int i = 0; i < p.nob; ++i) start[p.batch_dim[i]] = sl[p.batch_k[i]] + p.batch_shift[i];
  return true;
}

/** The output block's element offset of the update element at update-block
 *  coordinates `uc`, its window at `start` (scatter_start); -1 outside the block. */
template <int N>
TSR_HD int64_t scatter_dest(const ScatterPlanT<N>& p, const int64_t* start, const int64_t* uc) {
  int64_t off = 0;
  for (int d = 0; d < p.orank; ++d) {
    if (p.windowed[d]) continue;
    int64_t l = start[d] - p.out_origin[d];
    if (l < 0 || l >= p.out_size[d]) return -1;
    off += l * p.out_stride[d];
  }
  for (int j = 0; j < p.nw; ++j) {
    int d = p.window_odim[j];
    int64_t l = start[d] + p.window_origin[j] + uc[p.window_udim[j]] - p.out_origin[d];
    if (l < 0 || l >= p.out_size[d]) return -1;
    off += l * p.out_stride[d];
  }
  return off;
}

/** The CUDA kernels' plans. */
using GatherPlan = GatherPlanT<kIndexingMaxDims>;
/** The CUDA kernels' plans. */
using ScatterPlan = ScatterPlanT<kIndexingMaxDims>;

/** A scatter's combiner, ScatterKind's order (the CUDA kernels take it as an int). */
enum class ScatterOp : uint8_t { Set, Add, Sub, Mul, Min, Max };

/** The operand element a combined with update b, for bool, the integers, float and
 *  double (the half types combine in float). Integers wrap; bool adds as or,
 *  multiplies as and, subtracts as xor; min / max propagate a NaN update and keep a
 *  NaN operand, as lax.min / lax.max. */
template <typename T>
TSR_HD T scatter_combine(ScatterOp k, T a, T b) {
  switch (k) {
    case ScatterOp::Add:
      return ops::add(a, b);
    case ScatterOp::Sub:
      if constexpr (ops::Traits<T>::kBool) {
        return a != b;
      } else {
        return ops::sub(a, b);
      }
    case ScatterOp::Mul:
      return ops::mul(a, b);
    case ScatterOp::Min:
      if constexpr (ops::kIsFloat<T>) {
        return (b < a || b != b) ? b : a;
      } else {
        return b < a ? b : a;
      }
    case ScatterOp::Max:
      if constexpr (ops::kIsFloat<T>) {
        return (b > a || b != b) ? b : a;
      } else {
        return b > a ? b : a;
      }
    default:
      return b;
  }
}

/** (ar, ai) < (br, bi) lexicographically: complex min / max, as lax's. */
template <typename R>
TSR_HD bool complex_less(R ar, R ai, R br, R bi) {
  return ar < br || (ar == br && ai < bi);
}

}  // namespace tsr::detail
