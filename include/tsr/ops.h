#pragma once
/** NumPy/JAX-style operations on sharded arrays. Every op computes its output type
 *  (shape, dtype, sharding) by the rules of spec §12 or raises a tsr::Error that
 *  says how to fix the call; ops that take `out_sharding` use it as the type. */
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "tsr/array.h"

namespace tsr {

/** An `out_sharding` argument: none, a NamedSharding, or a PartitionSpec (resolved
 *  against the context mesh). */
using ShardingArg = std::variant<std::monostate, NamedSharding, PartitionSpec>;

/** An array or a C++ scalar. Scalars are weakly typed (as Python scalars in JAX):
 *  `x + 1` keeps x's dtype; 1.5 is a weak float, 1 a weak int, true a bool. */
class ArrayLike {
 public:
  /** An array. */
  ArrayLike(const Array& a) : value_(a) {}  // NOLINT: implicit by design
  /** A weak float. */
  ArrayLike(double v) : value_(v) {}  // NOLINT
  /** A weak float. */
  ArrayLike(float v) : value_(static_cast<double>(v)) {}  // NOLINT
  /** A weak int. */
  ArrayLike(int v) : value_(static_cast<int64_t>(v)) {}  // NOLINT
  /** A weak int. */
  ArrayLike(int64_t v) : value_(v) {}  // NOLINT
  /** A bool. */
  ArrayLike(bool v) : value_(v) {}  // NOLINT
  /** The alternatives. */
  const std::variant<Array, double, int64_t, bool>& value() const { return value_; }

 private:
  std::variant<Array, double, int64_t, bool> value_;
};

/** Axes of a reduction or squeeze: all (default), one, or several. */
class AxisArg {
 public:
  /** Every axis. */
  AxisArg() = default;
  /** One axis (negative counts from the end). */
  AxisArg(int axis) : all_(false), axes_{axis} {}  // NOLINT
  /** Several axes. */
  AxisArg(std::initializer_list<int> axes) : all_(false), axes_(axes) {}
  /** Several axes. */
  AxisArg(std::vector<int> axes) : all_(false), axes_(std::move(axes)) {}  // NOLINT
  /** True when no axes were named. */
  bool all() const { return all_; }
  /** The named axes. */
  const std::vector<int>& axes() const { return axes_; }

 private:
  bool all_ = true;
  std::vector<int> axes_;
};

// ---- creation ------------------------------------------------------------------
/** n x m ones on diagonal k (m defaults to n). */
Array eye(int64_t n, int64_t m = -1, int64_t k = 0, DType dtype = float32,
          const Placement& where = {});
/** num evenly spaced values from start to stop (inclusive when endpoint). */
Array linspace(double start, double stop, int64_t num = 50, bool endpoint = true,
               DType dtype = float32, const Placement& where = {});
/** Values along `dimension` of an array of `shape` (lax.broadcasted_iota). */
Array broadcasted_iota(DType dtype, const Shape& shape, int dimension, const Placement& where = {});
/** Zeros shaped (and, by default, typed and sharded) like x. */
Array zeros_like(const Array& x, std::optional<DType> dtype = {}, const Placement& where = {});
/** Ones shaped like x. */
Array ones_like(const Array& x, std::optional<DType> dtype = {}, const Placement& where = {});
/** jnp.empty_like: zeros shaped like x (XLA has no uninitialised arrays). */
Array empty_like(const Array& x, std::optional<DType> dtype = {}, const Placement& where = {});
/** `value` shaped like x. */
Array full_like(const Array& x, double value, std::optional<DType> dtype = {},
                const Placement& where = {});

/** jnp.full with an array fill value: fill_value (any rank, broadcast to shape)
 *  converted to dtype (default: its dtype, weak type kept for a weak scalar). */
Array full(const Shape& shape, const Array& fill_value, std::optional<DType> dtype = {},
           const Placement& where = {});
/** jnp.full_like with an array fill value: x's shape, dtype (default x's) and sharding. */
Array full_like(const Array& x, const Array& fill_value, std::optional<DType> dtype = {},
                const Placement& where = {});

// ---- elementwise ---------------------------------------------------------------
/** -x. */
Array neg(const Array& x);
/** |x| (of a complex x: its modulus, a real array). */
Array abs(const Array& x);
/** -1, 0 or 1 (of a complex x: x / |x|, 0 at 0). */
Array sign(const Array& x);
/** jnp.real: the real part of a complex array; a real array unchanged. */
Array real(const Array& x);
/** jnp.imag: the imaginary part of a complex array; zeros for a real array. */
Array imag(const Array& x);
/** jnp.conj: the complex conjugate; a real array unchanged. */
Array conj(const Array& x);
/** jnp.conjugate (the same as conj). */
Array conjugate(const Array& x);
/** lax.complex: x + i y (promoted; integers and half types become float32, float64
 *  stays): a complex64 or complex128 array. */
Array complex(const ArrayLike& x, const ArrayLike& y);
/** jnp.angle: the argument atan2(imag, real) in radians (in degrees with deg). */
Array angle(const Array& z, bool deg = false);
/** jnp.iscomplexobj: true for a complex64 / complex128 array. */
bool iscomplexobj(const Array& x);
/** Round down. */
Array floor(const Array& x);
/** Round up. */
Array ceil(const Array& x);
/** Round half to even (jnp.round). */
Array round(const Array& x);
/** e^x. */
Array exp(const Array& x);
/** 2^x. */
Array exp2(const Array& x);
/** Natural log. */
Array log(const Array& x);
/** log(1 + x). */
Array log1p(const Array& x);
/** e^x - 1. */
Array expm1(const Array& x);
/** Square root. */
Array sqrt(const Array& x);
/** 1 / sqrt(x). */
Array rsqrt(const Array& x);
/** x * x. */
Array square(const Array& x);
/** Sine. */
Array sin(const Array& x);
/** Cosine. */
Array cos(const Array& x);
/** Tangent. */
Array tan(const Array& x);
/** Hyperbolic tangent. */
Array tanh(const Array& x);
/** 1 / (1 + e^-x). */
Array logistic(const Array& x);
/** Same as logistic (jax.nn.sigmoid). */
Array sigmoid(const Array& x);
/** Error function. */
Array erf(const Array& x);
/** True where finite (bool). */
Array isfinite(const Array& x);
/** Logical not (bool) / bitwise not (integers). */
Array logical_not(const Array& x);
/** x ** y for a static integer y. */
Array integer_pow(const Array& x, int y);

/** a + b with NumPy broadcasting and JAX promotion. */
Array add(const ArrayLike& a, const ArrayLike& b);
/** a - b. */
Array subtract(const ArrayLike& a, const ArrayLike& b);
/** a * b. */
Array multiply(const ArrayLike& a, const ArrayLike& b);
/** a / b (true division: integers give float32). */
Array divide(const ArrayLike& a, const ArrayLike& b);
/** Remainder with the sign of a (lax.rem / C fmod). */
Array rem(const ArrayLike& a, const ArrayLike& b);
/** Remainder with the sign of b (jnp.remainder / jnp.mod / Python's %). */
Array remainder(const ArrayLike& a, const ArrayLike& b);
/** Same as remainder. */
Array mod(const ArrayLike& a, const ArrayLike& b);
/** floor(a / b) (jnp.floor_divide / Python's //): integers stay integers. */
Array floor_divide(const ArrayLike& a, const ArrayLike& b);
/** a ** b. */
Array power(const ArrayLike& a, const ArrayLike& b);
/** Elementwise max (NaN propagates). */
Array maximum(const ArrayLike& a, const ArrayLike& b);
/** Elementwise min (NaN propagates). */
Array minimum(const ArrayLike& a, const ArrayLike& b);
/** atan2(a, b). */
Array atan2(const ArrayLike& a, const ArrayLike& b);
/** Logical and (operands converted to bool). */
Array logical_and(const ArrayLike& a, const ArrayLike& b);
/** Logical or. */
Array logical_or(const ArrayLike& a, const ArrayLike& b);
/** Logical xor. */
Array logical_xor(const ArrayLike& a, const ArrayLike& b);
/** Bitwise and (bool or integers). */
Array bitwise_and(const ArrayLike& a, const ArrayLike& b);
/** Bitwise or. */
Array bitwise_or(const ArrayLike& a, const ArrayLike& b);
/** Bitwise xor. */
Array bitwise_xor(const ArrayLike& a, const ArrayLike& b);
/** a == b (bool). */
Array equal(const ArrayLike& a, const ArrayLike& b);
/** a != b. */
Array not_equal(const ArrayLike& a, const ArrayLike& b);
/** a < b. */
Array less(const ArrayLike& a, const ArrayLike& b);
/** a <= b. */
Array less_equal(const ArrayLike& a, const ArrayLike& b);
/** a > b. */
Array greater(const ArrayLike& a, const ArrayLike& b);
/** a >= b. */
Array greater_equal(const ArrayLike& a, const ArrayLike& b);
/** cond ? x : y elementwise, all three broadcast (jnp.where). */
Array where(const ArrayLike& cond, const ArrayLike& x, const ArrayLike& y);
/** lax.select_n: cases[which]; which is bool (2 cases) or int32. No broadcasting. */
Array select_n(const Array& which, const std::vector<Array>& cases);
/** min(max(x, lo), hi); lo and hi are scalars or shaped like x. */
Array clamp(const ArrayLike& lo, const Array& x, const ArrayLike& hi);
/** Converts the element type (sharding unchanged). Float to integer truncates toward
 *  zero, saturates at the integer's range and maps NaN to 0 (as XLA); integer to
 *  integer wraps. */
Array astype(const Array& x, DType dtype);
/** jnp.copy / x.copy(): a new array with x's values, type and layout in its own
 *  buffers (a later donation of x leaves it intact). Under jit, one copy per device. */
Array copy(const Array& x);
/** Options of convert_element_type. */
struct ConvertOptions {
  bool weak = false;         /**< the result is weakly typed */
  ShardingArg sharding = {}; /**< the result's sharding (default: x's) */
};
/** lax.convert_element_type: `{.weak = true}` keeps a weak type, `{.sharding = P(...)}`
 *  lays the result out as given (an unreduced value converts only float -> float). */
Array convert_element_type(const Array& x, DType dtype, const ConvertOptions& o = {});
/** lax.bitcast_convert_type: the same bits read as `dtype`. Same width keeps the
 *  shape; a narrower dtype adds a trailing dim of the width ratio, a wider one
 *  removes a last dim equal to it (which must be unsharded). No bool. */
Array bitcast_convert_type(const Array& x, DType dtype);

/** -x. */
Array operator-(const Array& x);
/** a + b. */
Array operator+(const ArrayLike& a, const ArrayLike& b);
/** a - b. */
Array operator-(const ArrayLike& a, const ArrayLike& b);
/** a * b. */
Array operator*(const ArrayLike& a, const ArrayLike& b);
/** a / b. */
Array operator/(const ArrayLike& a, const ArrayLike& b);
/** remainder(a, b): the sign of b, as Python's %. */
Array operator%(const ArrayLike& a, const ArrayLike& b);
/** a < b. */
Array operator<(const ArrayLike& a, const ArrayLike& b);
/** a <= b. */
Array operator<=(const ArrayLike& a, const ArrayLike& b);
/** a > b. */
Array operator>(const ArrayLike& a, const ArrayLike& b);
/** a >= b. */
Array operator>=(const ArrayLike& a, const ArrayLike& b);
/** Logical/bitwise and. */
Array operator&(const ArrayLike& a, const ArrayLike& b);
/** Logical/bitwise or. */
Array operator|(const ArrayLike& a, const ArrayLike& b);
/** Logical/bitwise xor. */
Array operator^(const ArrayLike& a, const ArrayLike& b);
/** Logical not. */
Array operator!(const Array& x);

// ---- reductions ------------------------------------------------------------------
/** Options of reductions. */
struct ReduceOptions {
  bool keepdims = false; /**< keep reduced dims as size 1 (unsharded) */
  /** sum/max/min: e.g. keep a sharded axis unreduced; the sharding of the result (with
   *  keepdims, of the kept-dims result: None at the kept dims) */
  ShardingArg out_sharding = {};
  std::optional<DType> dtype = {}; /**< accumulate/output dtype */
};
/** Sum over axes (all by default). Bool and small ints sum as int32 / uint32. */
Array sum(const Array& x, const AxisArg& axis = {}, const ReduceOptions& o = {});
/** Product over axes. */
Array prod(const Array& x, const AxisArg& axis = {}, const ReduceOptions& o = {});
/** Max over axes. */
Array max(const Array& x, const AxisArg& axis = {}, const ReduceOptions& o = {});
/** Min over axes. */
Array min(const Array& x, const AxisArg& axis = {}, const ReduceOptions& o = {});
/** Mean over axes (float). */
Array mean(const Array& x, const AxisArg& axis = {}, const ReduceOptions& o = {});
/** Variance over axes with `ddof` delta degrees of freedom. */
Array var(const Array& x, const AxisArg& axis = {}, int ddof = 0, const ReduceOptions& o = {});
/** True if any element is non-zero. */
Array any(const Array& x, const AxisArg& axis = {}, const ReduceOptions& o = {});
/** jnp.all as a function object, so that the same name also reads as NumPy's `:`
 *  in an index: `x[{all, 0}]` (see tsr/indexing.h). */
struct AllFn {
  /** True if every element is non-zero. */
  Array operator()(const Array& x, const AxisArg& axis = {}, const ReduceOptions& o = {}) const;
};
/** True if every element is non-zero; inside an index, the whole dimension. */
inline constexpr AllFn all{};
/** Index of the max along axis (flattened when axis is not given), int32. */
Array argmax(const Array& x, std::optional<int> axis = {}, bool keepdims = false);
/** Index of the min along axis, int32. */
Array argmin(const Array& x, std::optional<int> axis = {}, bool keepdims = false);
/** log(sum(exp(x))) over axes, computed stably. */
Array logsumexp(const Array& x, const AxisArg& axis = {}, bool keepdims = false);
/** exp(x) / sum(exp(x)) along axis (default last). */
Array softmax(const Array& x, int axis = -1);
/** x - logsumexp(x) along axis (default last). */
Array log_softmax(const Array& x, int axis = -1);

// ---- linear algebra --------------------------------------------------------------
/** Options of contractions. */
struct DotOptions {
  ShardingArg out_sharding = {};                    /**< the result's sharding (may be unreduced) */
  std::optional<DType> preferred_element_type = {}; /**< output dtype */
};
/** Dimension numbers of dot_general. */
struct DotDimensionNumbers {
  /** contracted dimensions of lhs, paired in order with rhs_contracting */
  std::vector<int> lhs_contracting, rhs_contracting; /**< contracted dimensions of rhs */
  /** batch dimensions of lhs, paired in order with rhs_batch */
  std::vector<int> lhs_batch = {}, rhs_batch = {}; /**< batch dimensions of rhs */
};
/** lax.dot_general: output is (batch, lhs free, rhs free). */
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims,
                  const DotOptions& o = {});
/** NumPy matmul (1-D operands, broadcast batch dims). */
Array matmul(const Array& a, const Array& b, const DotOptions& o = {});
/** NumPy dot. */
Array dot(const Array& a, const Array& b, const DotOptions& o = {});
/** How einsum orders its pairwise contractions. */
enum class EinsumPath : uint8_t {
  Greedy,      /**< opt_einsum's greedy path: the pair whose result is smallest minus its inputs */
  LeftToRight, /**< ((a b) c) ...: the operands' order (JAX's optimize=False) */
};
/** Options of einsum. */
struct EinsumOptions {
  ShardingArg out_sharding = {}; /**< the result's sharding (the only contract) */
  std::optional<DType> preferred_element_type = {}; /**< output dtype of each contraction */
  EinsumPath optimize = EinsumPath::Greedy;         /**< contraction order */
};
/** Einstein summation, e.g. einsum("ij,jk->ik", {a, b}), with `...`, repeated labels
 *  (diagonals, traces) and any number of operands contracted as one unit. */
Array einsum(const std::string& subscripts, const std::vector<Array>& operands,
             const EinsumOptions& o = {});

/** Contraction axes of tensordot: an int n (the last n dims of a with the first n
 *  of b) or two equal-length lists. */
class TensordotAxes {
 public:
  /** The last n dims of a with the first n of b. */
  TensordotAxes(int n) : n_(n) {}  // NOLINT: implicit by design
  /** a's dims `a` with b's dims `b`, pairwise. */
  TensordotAxes(std::vector<int> a, std::vector<int> b)
      : n_(-1), a_(std::move(a)), b_(std::move(b)) {}
  /** n, or -1 when lists were given. */
  int n() const { return n_; }
  /** a's contracted dims (lists form). */
  const std::vector<int>& a() const { return a_; }
  /** b's contracted dims (lists form). */
  const std::vector<int>& b() const { return b_; }

 private:
  int n_;
  std::vector<int> a_, b_;
};
/** jnp.tensordot: contracts the given dims; the result is (a's free dims, b's free dims). */
Array tensordot(const Array& a, const Array& b, const TensordotAxes& axes = 2,
                const DotOptions& o = {});

// ---- shape -----------------------------------------------------------------------
/** Row-major reshape; one size may be -1. */
Array reshape(const Array& x, Shape new_shape, const ShardingArg& out_sharding = {});
/** Element order of reshape: C (row-major) or F (column-major, Fortran). */
enum class Order : uint8_t { C, F };
/** reshape(..., order='F'): reads and writes elements in column-major order. */
Array reshape(const Array& x, Shape new_shape, Order order, const ShardingArg& out_sharding = {});
/** Permutes dims (reverses them by default). */
Array transpose(const Array& x, std::vector<int> perm = {});
/** Removes size-1 dims (the named ones, or all). */
Array squeeze(const Array& x, const AxisArg& axis = {});
/** Inserts size-1 dims at the given output positions. */
Array expand_dims(const Array& x, const AxisArg& axis);
/** lax.broadcast_in_dim. */
Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int>& broadcast_dims,
                       const ShardingArg& out_sharding = {});
/** NumPy broadcast_to; a sharded input dim must keep its sharding (E31). */
Array broadcast_to(const Array& x, const Shape& shape, const ShardingArg& out_sharding = {});
/** lax.slice: [start, limit) with optional strides. */
Array slice(const Array& x, const Shape& start, const Shape& limit, const Shape& strides = {});
/** lax.dynamic_slice with start indices (scalars arrays or ints) and static sizes. */
Array dynamic_slice(const Array& x, const std::vector<ArrayLike>& start, const Shape& sizes);
/** lax.dynamic_update_slice. */
Array dynamic_update_slice(const Array& x, const Array& update,
                           const std::vector<ArrayLike>& start);
/** lax.pad with (lo, hi, interior) per dim. */
Array pad(const Array& x, const ArrayLike& value,
          const std::vector<std::tuple<int64_t, int64_t, int64_t>>& config);
/** Joins arrays along an existing axis. */
Array concatenate(const std::vector<Array>& xs, int axis = 0);
/** Joins arrays along a new axis. */
Array stack(const std::vector<Array>& xs, int axis = 0);
/** Splits into `sections` equal parts along axis. */
std::vector<Array> split(const Array& x, int64_t sections, int axis = 0);
/** Splits at the given indices along axis. */
std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int axis = 0);
/** Reverses the given dims. */
Array rev(const Array& x, const std::vector<int>& dims);

// ---- sharding --------------------------------------------------------------------
/** Asserts (on all-Explicit meshes, spec E28) that x already has this sharding. */
Array with_sharding_constraint(const Array& x, const ShardingArg& sharding);

// ---- special functions (random numbers) ------------------------------------------
/** Inverse error function on (-1, 1); ±1 give ±inf, |x| > 1 gives NaN (lax.erf_inv). */
Array erfinv(const Array& x);

// ---- cumulative ops, sorting and NumPy extras ------------------------------------
/** Options of the cumulative ops. */
struct CumOptions {
  bool reverse = false;            /**< scan from the last element (lax.cumsum reverse) */
  std::optional<DType> dtype = {}; /**< accumulate/output dtype */
};
/** Running sum along axis; axis not given: of the flattened (fully replicated) x.
 *  Bool accumulates as int32, integers keep their dtype (as jnp). The axis must be
 *  unsharded. */
Array cumsum(const Array& x, std::optional<int> axis = {}, const CumOptions& o = {});
/** Running product along axis (promotion and sharding as cumsum). */
Array cumprod(const Array& x, std::optional<int> axis = {}, const CumOptions& o = {});
/** Running max along axis (NaN propagates). */
Array cummax(const Array& x, std::optional<int> axis = {}, const CumOptions& o = {});
/** Running min along axis (NaN propagates). */
Array cummin(const Array& x, std::optional<int> axis = {}, const CumOptions& o = {});
/** Running log(sum(exp(x))) along axis (integers compute in float32). */
Array cumlogsumexp(const Array& x, std::optional<int> axis = {}, const CumOptions& o = {});

/** An associative binary operation on lists of arrays (a, b) -> same-shaped list. */
using ScanFn =
    std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;
/** lax.associative_scan: element k along `axis` is fn applied to elements 0..k of every
 *  array of `elems` together, evaluated by JAX's parallel-prefix tree (so ties and
 *  roundings match JAX's); `reverse` scans from the end. fn must be associative and
 *  elementwise over `axis`. A sharded axis is scanned only where slice and pad allow it. */
std::vector<Array> associative_scan(const ScanFn& fn, const std::vector<Array>& elems,
                                    bool reverse = false, int axis = 0);
/** associative_scan of one array. */
Array associative_scan(const std::function<Array(const Array&, const Array&)>& fn,
                       const Array& elems, bool reverse = false, int axis = 0);

/** Sorted copy along axis (nullopt: flattened); NaNs last; descending reverses. */
Array sort(const Array& x, std::optional<int> axis = -1, bool stable = true,
           bool descending = false);
/** lax.sort: sorts all operands by the first num_keys (lexicographically). */
std::vector<Array> sort(const std::vector<Array>& operands, int dimension = -1,
                        bool is_stable = true, int num_keys = 1);
/** int32 indices that sort x along axis (a sort with an iota, as jnp.argsort). */
Array argsort(const Array& x, std::optional<int> axis = -1, bool stable = true,
              bool descending = false);
/** The k largest values along the last axis and their int32 indices (ties: lower index first). */
std::pair<Array, Array> top_k(const Array& x, int64_t k);
/** int32 insertion indices of v into the 1-D ascending `sorted` ("left" or "right");
 *  the result is sharded like v and a sharded `sorted` is gathered first. */
Array searchsorted(const Array& sorted, const ArrayLike& v, const std::string& side = "left");

/** Rolls elements by shift along axis (nullopt: of the flattened array); the axis must be
 * unsharded. */
Array roll(const Array& a, int64_t shift, std::optional<int> axis = {});
/** Rolls along several axes (shifts and axes broadcast against each other). */
Array roll(const Array& a, const std::vector<int64_t>& shifts, const std::vector<int>& axes);
/** jnp.roll with a traced shift: `shift` is a 0-d or 1-d integer array broadcast
 *  against `axes` (empty: roll the flattened array). Rolled axes must be unsharded. */
Array roll(const Array& a, const Array& shift, const std::vector<int>& axes = {});
/** Repeats x reps[i] times along dim i (tiled dims must be unsharded). */
Array tile(const Array& x, const std::vector<int64_t>& reps);
/** Repeats each element `repeats` times along axis; no axis: along axis 0 of the
 *  flattened array (jnp.repeat(arange(4), 2) is [0,0,1,1,2,2,3,3]). In an Explicit
 *  mesh, without out_sharding, the repeated axis must be unsharded. */
Array repeat(const Array& a, int64_t repeats, std::optional<int> axis = {},
             std::optional<int64_t> total_repeat_length = {}, const ShardingArg& out_sharding = {});
/** Repeats element i repeats[i] times along axis (no axis: of the flattened array);
 *  total_repeat_length truncates or pads with the last value. */
Array repeat(const Array& a, const std::vector<int64_t>& repeats, std::optional<int> axis = {},
             std::optional<int64_t> total_repeat_length = {}, const ShardingArg& out_sharding = {});
/** Reverses the given axes (all by default). */
Array flip(const Array& x, const AxisArg& axis = {});
/** Zeros below diagonal k of the last two dims. */
Array triu(const Array& x, int k = 0);
/** Zeros above diagonal k of the last two dims. */
Array tril(const Array& x, int k = 0);
/** 1-D v: a square matrix with v on diagonal k; 2-D: its diagonal k. */
Array diag(const Array& v, int k = 0);
/** Diagonal `offset` of the (axis1, axis2) planes, appended as the last dim. */
Array diagonal(const Array& x, int offset = 0, int axis1 = 0, int axis2 = 1);
/** Sum of diagonal `offset` (integers accumulate as sum does). */
Array trace(const Array& x, int offset = 0, int axis1 = 0, int axis2 = 1);
/** Limits x to [min, max] (either optional; broadcasting; NaN propagates). */
Array clip(const Array& x, const std::optional<ArrayLike>& min = {},
           const std::optional<ArrayLike>& max = {});
/** Splits x along axis into arrays without that axis (the axis must be unsharded). */
std::vector<Array> unstack(const Array& x, int axis = 0);
/** The flattened array (row-major). */
Array ravel(const Array& x);
/** Same as ravel. */
Array flatten(const Array& x);
/** Exchanges two axes. */
Array swapaxes(const Array& x, int axis1, int axis2);
/** Moves axis `source` to position `destination`. */
Array moveaxis(const Array& x, int source, int destination);
/** Moves several axes to new positions (the others keep their order). */
Array moveaxis(const Array& x, const std::vector<int>& source, const std::vector<int>& destination);
/** Coordinate grids from 1-D arrays ("xy": Cartesian, first two dims swapped; "ij": matrix). */
std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing = "xy");
/** Outer product of the flattened a and b. */
Array outer(const Array& a, const Array& b);
/** Kronecker product. */
Array kron(const Array& a, const Array& b);
/** |a - b| <= atol + rtol * |b| elementwise (infs equal by sign; NaN only with equal_nan). */
Array isclose(const ArrayLike& a, const ArrayLike& b, double rtol = 1e-05, double atol = 1e-08,
              bool equal_nan = false);
/** A bool scalar array: isclose everywhere. */
Array allclose(const ArrayLike& a, const ArrayLike& b, double rtol = 1e-05, double atol = 1e-08,
               bool equal_nan = false);
/** Replaces NaN by nan and +-inf by posinf / neginf (default: the dtype's largest finite). */
Array nan_to_num(const Array& x, double nan = 0.0, std::optional<double> posinf = {},
                 std::optional<double> neginf = {});

}  // namespace tsr
