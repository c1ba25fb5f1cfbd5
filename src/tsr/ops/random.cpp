// jax.random front-ends: samplers bind random_bits / random_uniform /
// random_randint (values computed per device from global indices) and compose
// the rest from ordinary ops, which keep the requested sharding.
#include "tsr/random.h"

#include <cmath>
#include <limits>

#include "tsr/core/array_impl.h"
#include "tsr/core/half_bits.h"
#include "tsr/error.h"
#include "tsr/indexing.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/random.h"

namespace tsr::random {
using namespace tsr::detail;

namespace {

void check_float(DType dtype, const char* api) {
  check_dtype(dtype, api);
  if (!is_floating(dtype))
    throw ValueError(std::string("[") + api + "] dtype argument to `" + api +
                     "` must be a float dtype. Got dtype=" + dtype_name(dtype) +
                     "; expected float16, bfloat16, float32 or float64.");
}

prim::Placed placed(const ShardingArg& s, const Shape& shape, const char* api) {
  if (const auto* ns = std::get_if<NamedSharding>(&s)) return resolve_placed(*ns, shape, api);
  if (const auto* ps = std::get_if<PartitionSpec>(&s)) return resolve_placed(*ps, shape, api);
  return {};
}

Array draw(prim::RandomDist dist, const Array& key, const Shape& shape, DType dtype, double flo,
           double fhi, int64_t ilo, int64_t ihi, const ShardingArg& out_sharding, const char* api) {
  check_key(key.type(), api);
  check_dtype(dtype, api);
  check_shape(shape, api, itemsize(dtype));
  return bind1(std::make_shared<prim::RandomBits>(dist, shape, dtype, flo, fhi, ilo, ihi,
                                                  placed(out_sharding, shape, api)),
               {key});
}

// v rounded to dtype t, as a double.
double in_dtype(double v, DType t) {
  switch (t) {
    case DType::Float16:
      return static_cast<float>(float16_t(static_cast<float>(v)));
    case DType::BFloat16:
      return static_cast<float>(bfloat16_t(static_cast<float>(v)));
    case DType::Float32:
      return static_cast<float>(v);
    default:
      return v;
  }
}

// numpy.nextafter(v, toward) in dtype t (v already representable in t).
double next_after(double v, double toward, DType t) {
  if (t == DType::Float64) return std::nextafter(v, toward);
  if (t == DType::Float32) return std::nextafter(static_cast<float>(v), static_cast<float>(toward));
  if (std::isnan(v) || std::isnan(toward) || v == toward) return v;
  uint16_t b = t == DType::Float16 ? float16_t(static_cast<float>(v)).bits
                                   : bfloat16_t(static_cast<float>(v)).bits;
  if (v == 0) {
    b = toward > 0 ? 1 : 0x8001;  // the smallest subnormal of that sign
  } else if ((toward > v) == (v > 0)) {
    ++b;  // away from zero
  } else {
    --b;
  }
  float f = t == DType::Float16 ? half_bits_to_float(b) : bf16_bits_to_float(b);
  return f;
}

// Smallest positive normal of dtype t (finfo.tiny).
double tiny(DType t) {
  switch (t) {
    case DType::Float16:
      return 6.103515625e-05;
    case DType::Float64:
      return std::numeric_limits<double>::min();
    default:
      return std::numeric_limits<float>::min();
  }
}

}  // namespace

Array key(int64_t seed) {
  uint64_t s = static_cast<uint64_t>(seed);
  return tsr::array(std::vector<uint32_t>{static_cast<uint32_t>(s >> 32), static_cast<uint32_t>(s)},
                    {2});
}

std::pair<Array, Array> threefry2x32(const Array& key, const Array& x0, const Array& x1) {
  check_key(key.type(), "threefry2x32");
  auto out = bind(std::make_shared<prim::Threefry2x32>(), {key, x0, x1});
  return {out[0], out[1]};
}

Array split(const Array& key, int64_t num, const ShardingArg& out_sharding) {
  check_key(key.type(), "split");
  if (num < 0 || num > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
    throw ValueError("[split] num must be in [0, 2**32). Got num=" + std::to_string(num) +
                     "; expected a non-negative count of keys below 2**32.");
  // Counters (0, i), laid out like the rows of the result.
  std::optional<NamedSharding> want = canonicalize_sharding(out_sharding, "split");
  Placement rows;
  if (want) {
    PartitionSpec s = want->spec().normalized(2);
    rows = NamedSharding(want->mesh(), PartitionSpec(std::vector<PartitionEntry>{s.entries()[0]}));
  }
  Array lo = tsr::iota({num}, uint32, rows);
  Array hi = tsr::zeros({num}, uint32, rows);
  auto [a, b] = threefry2x32(key, hi, lo);
  Array keys = tsr::stack({a, b}, 1);
  if (want && !(typeof(keys).sharding.spec().normalized(2) == want->spec().normalized(2)))
    keys = tsr::reshard(keys, *want);
  return keys;
}

std::vector<Array> split_keys(const Array& key, int64_t num) {
  Array keys = random::split(key, num);
  std::vector<Array> out;
  for (int64_t i = 0; i < num; ++i)
    out.push_back(tsr::reshape(tsr::slice(keys, {i, 0}, {i + 1, 2}), {2}));
  return out;
}

Array fold_in(const Array& key, uint32_t data) {
  check_key(key.type(), "fold_in");
  Array d = scalar_array(static_cast<double>(data), uint32, false, &key);
  return fold_in(key, d);
}

Array fold_in(const Array& key, const Array& data) {
  check_key(key.type(), "fold_in");
  if (data.ndim() != 0 || !(is_integer(data.dtype()) || data.dtype() == DType::Bool))
    throw TypeError("[fold_in] fold_in accepts a scalar integer. Got data " + data.type().str() +
                    "; expected a rank-0 integer array. Use vmap for batches of data.");
  Array lo = convert(data, uint32);
  auto [a, b] = threefry2x32(key, tsr::zeros_like(lo), lo);
  return tsr::stack({a, b}, 0);
}

Array bits(const Array& key, const Shape& shape, DType dtype, const ShardingArg& out_sharding) {
  if (!is_unsigned(dtype))
    throw ValueError(std::string("[bits] dtype argument to `bits` must be an unsigned int dtype. "
                                 "Got dtype=") +
                     dtype_name(dtype) + "; expected uint8, uint16, uint32 or uint64.");
  return draw(prim::RandomDist::Bits, key, shape, dtype, 0, 0, 0, 0, out_sharding, "bits");
}

Array uniform(const Array& key, const Shape& shape, DType dtype, double minval, double maxval,
              const ShardingArg& out_sharding) {
  check_float(dtype, "uniform");
  return draw(prim::RandomDist::Uniform, key, shape, dtype, minval, maxval, 0, 0, out_sharding,
              "uniform");
}

Array normal(const Array& key, const Shape& shape, DType dtype, const ShardingArg& out_sharding) {
  check_float(dtype, "normal");
  double lo = next_after(-1.0, 0.0, dtype);
  Array u =
      draw(prim::RandomDist::Uniform, key, shape, dtype, lo, 1.0, 0, 0, out_sharding, "normal");
  return multiply(erfinv(u), std::sqrt(2.0));
}

Array bernoulli(const Array& key, double p, const Shape& shape, const ShardingArg& out_sharding) {
  return less(uniform(key, shape, float32, 0.0, 1.0, out_sharding), p);
}

Array bernoulli(const Array& key, const Array& p, std::optional<Shape> shape,
                const ShardingArg& out_sharding) {
  if (!is_floating(p.dtype()))
    throw TypeError(std::string("[bernoulli] bernoulli probability `p` must have a floating "
                                "dtype. Got p of dtype ") +
                    dtype_name(p.dtype()) + "; expected a float array. Convert with astype.");
  Shape s = shape ? *shape : p.shape();
  bool ok = p.ndim() <= static_cast<int>(s.size());
  for (int d = 0; ok && d < p.ndim(); ++d) {
    int64_t pd = p.shape()[p.ndim() - 1 - d], sd = s[s.size() - 1 - d];
    ok = pd == sd || pd == 1;
  }
  if (!ok)
    throw ValueError(
        "[bernoulli] bernoulli parameter shapes must be broadcast-compatible with "
        "shape argument. Got p shape " +
        shape_str(p.shape()) + " and shape " + shape_str(s) +
        "; expected p to broadcast to shape. Pass a matching shape.");
  return less(uniform(key, s, p.dtype(), 0.0, 1.0, out_sharding), p);
}

Array randint(const Array& key, const Shape& shape, int64_t minval, int64_t maxval, DType dtype,
              const ShardingArg& out_sharding) {
  if (!is_integer(dtype))
    throw TypeError(std::string("[randint] randint only accepts integer dtypes. Got dtype=") +
                    dtype_name(dtype) + "; expected an integer dtype such as int32 or uint8.");
  return draw(prim::RandomDist::RandInt, key, shape, dtype, 0, 0, minval, maxval, out_sharding,
              "randint");
}

Array truncated_normal(const Array& key, double lower, double upper, const Shape& shape,
                       DType dtype, const ShardingArg& out_sharding) {
  check_float(dtype, "truncated_normal");
  // a = erf(lower / sqrt2), b = erf(upper / sqrt2), each step in the dtype.
  double sqrt2 = in_dtype(std::sqrt(2.0), dtype);
  double lo = in_dtype(lower, dtype), hi = in_dtype(upper, dtype);
  auto erf_in = [&](double v) {
    if (dtype == float64) return std::erf(v / sqrt2);
    return in_dtype(std::erf(static_cast<float>(in_dtype(v / sqrt2, dtype))), dtype);
  };
  Array u = draw(prim::RandomDist::Uniform, key, shape, dtype, erf_in(lo), erf_in(hi), 0, 0,
                 out_sharding, "truncated_normal");
  Array out = multiply(erfinv(u), std::sqrt(2.0));
  // Keep the result inside the open interval despite rounding.
  double inf = std::numeric_limits<double>::infinity();
  return clamp(next_after(lo, inf, dtype), out, next_after(hi, -inf, dtype));
}

Array gumbel(const Array& key, const Shape& shape, DType dtype, const ShardingArg& out_sharding) {
  check_float(dtype, "gumbel");
  Array u = draw(prim::RandomDist::Uniform, key, shape, dtype, tiny(dtype), 1.0, 0, 0, out_sharding,
                 "gumbel");
  return neg(log(neg(log(u))));
}

Array categorical(const Array& key, const Array& logits, int axis, std::optional<Shape> shape,
                  const ShardingArg& out_sharding) {
  check_key(key.type(), "categorical");
  if (!is_floating(logits.dtype()))
    throw TypeError(std::string("[categorical] logits must be a float array. Got dtype ") +
                    dtype_name(logits.dtype()) +
                    "; expected a floating dtype. Convert with astype.");
  int nd = logits.ndim();
  int ax = norm_axis(axis, nd, "categorical");
  Shape batch = logits.shape();
  batch.erase(batch.begin() + ax);
  Shape s = shape ? *shape : batch;
  check_shape(s, "categorical", itemsize(logits.dtype()));
  bool ok = s.size() >= batch.size();
  for (size_t d = 0; ok && d < batch.size(); ++d) {
    int64_t bd = batch[batch.size() - 1 - d], sd = s[s.size() - 1 - d];
    ok = bd == sd || bd == 1;
  }
  if (!ok)
    throw ValueError(
        "[categorical] categorical parameter shapes must be broadcast-compatible "
        "with shape argument. Got shape " +
        shape_str(s) + " for logits batch shape " + shape_str(batch) +
        "; expected a shape that ends with the batch shape.");
  size_t prefix = s.size() - batch.size();
  // The Gumbel sample has the categories' axis inserted at the same place from the end.
  Shape gshape = s;
  int gax = static_cast<int>(prefix) + ax;
  gshape.insert(gshape.begin() + gax, logits.shape()[ax]);
  ShardingArg gsharding;
  if (auto want = canonicalize_sharding(out_sharding, "categorical")) {
    std::vector<PartitionEntry> e = want->spec().normalized(static_cast<int>(s.size())).entries();
    e.insert(e.begin() + gax, PartitionEntry());
    gsharding = NamedSharding(want->mesh(), PartitionSpec(e));
  }
  Array g = gumbel(key, gshape, logits.dtype(), gsharding);
  Array l = logits;
  for (size_t i = 0; i < prefix; ++i) l = expand_dims(l, 0);
  return argmax(add(g, l), gax);
}

namespace {

// jax.random._shuffle: ceil(3 ln(size) / ln(2^32 - 1)) rounds of sorting x by
// fresh random bits (a stable sort_key_val), each round with a split-off key.
Array shuffle(Array key, Array x, int axis) {
  const double size = static_cast<double>(std::max<int64_t>(1, numel(x.shape())));
  const int rounds = static_cast<int>(std::ceil(3.0 * std::log(size) / std::log(4294967295.0)));
  for (int r = 0; r < rounds; ++r) {
    std::vector<Array> ks = split_keys(key, 2);
    key = ks[0];
    Array sort_keys = bits(ks[1], x.shape(), uint32, x.type().sharding);
    x = tsr::sort(std::vector<Array>{sort_keys, x}, axis, true, 1)[1];
  }
  return x;
}

}  // namespace

Array permutation(const Array& key, int64_t n, const ShardingArg& out_sharding) {
  if (n < 0)
    throw ValueError("[permutation] n must be non-negative. Got n=" + std::to_string(n) +
                     "; expected n >= 0.");
  Array x = tsr::arange(static_cast<int>(n));
  Array p = shuffle(key, x, 0);
  auto s = canonicalize_sharding(out_sharding, "permutation");
  return s ? tsr::reshard(p, Placement(*s)) : p;
}

Array permutation(const Array& key, const Array& x, int axis, bool independent,
                  const ShardingArg& out_sharding) {
  if (x.ndim() == 0)
    throw ValueError("[permutation] x must be an array of rank >= 1. Got " + x.type().str() +
                     "; expected an array, or pass the integer n for a permutation of arange(n).");
  if (auto s = canonicalize_sharding(out_sharding, "permutation")) {
    // As auto_axes: shuffle replicated (any axis may be sharded), then lay out.
    Array r = permutation(key, tsr::reshard(x, Placement(NamedSharding(s->mesh(), P()))), axis,
                          independent);
    return tsr::reshard(r, Placement(*s));
  }
  int ax = norm_axis(axis, x.ndim(), "permutation");
  if (independent || x.ndim() == 1) return shuffle(key, x, ax);
  Array ind = shuffle(key, tsr::arange(static_cast<int>(x.shape()[ax])), 0);
  return tsr::take(x, ind, ax, {.unique_indices = true});
}

}  // namespace tsr::random
