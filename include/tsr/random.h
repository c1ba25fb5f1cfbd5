#pragma once
/** Counter-based random numbers (threefry2x32), independent of sharding.
 *
 *  Mirrors jax.random with raw uint32[2] keys and jax_threefry_partitionable=True
 *  (the JAX default since 0.5): element i of a sample of shape S hashes the
 *  counter (hi32(i), lo32(i)) of its row-major index in S. Each device computes
 *  only its own block from the block's global position, so values are
 *  bit-identical whatever the mesh, device count or out_sharding. This is a
 *  deliberate guarantee beyond JAX, whose values may change with the sharding
 *  when the partitionable flag is off (JAX issue #40232).
 *
 *  Differences from JAX: minval/maxval (uniform, randint), p (bernoulli) and
 *  lower/upper (truncated_normal) are scalars here (bernoulli also takes an
 *  array p); erfinv is computed in double and rounded, so normal samples may
 *  differ from XLA's float polynomial in the last ulp; key(seed) splits a 64-bit
 *  seed as JAX does with jax_enable_x64 (a negative seed gives hi = 0xFFFFFFFF). */
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tsr/array.h"
#include "tsr/ops.h"

namespace tsr::random {

/** A raw key uint32[2] = (seed >> 32, seed & 0xFFFFFFFF), like jax.random.PRNGKey. */
Array key(int64_t seed);

/** `num` new keys as uint32[num, 2] (jax.random.split); row i hashes counter (0, i). */
Array split(const Array& key, int64_t num = 2, const ShardingArg& out_sharding = {});
/** split as a vector of `num` uint32[2] keys (C++ convenience). */
std::vector<Array> split_keys(const Array& key, int64_t num = 2);

/** A new key from `key` and 32-bit `data` (jax.random.fold_in): the hash of (0, data). */
Array fold_in(const Array& key, uint32_t data);
/** fold_in with a rank-0 integer array (may be traced), converted to uint32. */
Array fold_in(const Array& key, const Array& data);

/** The threefry2x32 hash (20 rounds) of each counter pair (x0[i], x1[i]) under
 *  key; x0, x1 are uint32 of one shape; returns the two output words. */
std::pair<Array, Array> threefry2x32(const Array& key, const Array& x0, const Array& x1);

/** Uniform random bits of `shape`: uint32 (default), uint8, uint16 or uint64 (jax.random.bits). */
Array bits(const Array& key, const Shape& shape = {}, DType dtype = uint32,
           const ShardingArg& out_sharding = {});

/** Uniform floats in [minval, maxval) (jax.random.uniform). */
Array uniform(const Array& key, const Shape& shape = {}, DType dtype = float32, double minval = 0.0,
              double maxval = 1.0, const ShardingArg& out_sharding = {});

/** Standard normal floats (jax.random.normal: sqrt(2) * erfinv(uniform(-1, 1))). */
Array normal(const Array& key, const Shape& shape = {}, DType dtype = float32,
             const ShardingArg& out_sharding = {});

/** Booleans that are true with probability p (jax.random.bernoulli, p as float32). */
Array bernoulli(const Array& key, double p = 0.5, const Shape& shape = {},
                const ShardingArg& out_sharding = {});
/** bernoulli with an array of float probabilities p (shape defaults to p's). */
Array bernoulli(const Array& key, const Array& p, std::optional<Shape> shape = {},
                const ShardingArg& out_sharding = {});

/** Integers in [minval, maxval) of an integer dtype (jax.random.randint; minval
 *  >= maxval gives minval, bounds are clipped to the dtype). */
Array randint(const Array& key, const Shape& shape, int64_t minval, int64_t maxval,
              DType dtype = int32, const ShardingArg& out_sharding = {});

/** Normal floats truncated to (lower, upper) (jax.random.truncated_normal). */
Array truncated_normal(const Array& key, double lower, double upper, const Shape& shape = {},
                       DType dtype = float32, const ShardingArg& out_sharding = {});

/** Standard Gumbel floats: -log(-log(uniform(tiny, 1))) (jax.random.gumbel). */
Array gumbel(const Array& key, const Shape& shape = {}, DType dtype = float32,
             const ShardingArg& out_sharding = {});

/** int32 samples of categorical distributions given unnormalized log-probabilities
 *  along `axis` (jax.random.categorical, by the Gumbel-max trick). `shape`
 *  defaults to logits' shape without `axis` and must end with it (broadcast). */
Array categorical(const Array& key, const Array& logits, int axis = -1,
                  std::optional<Shape> shape = {}, const ShardingArg& out_sharding = {});

/** A random permutation of arange(n) as int32 (jax.random.permutation(key, n));
 *  the result is replicated, or laid out as out_sharding. */
Array permutation(const Array& key, int64_t n, const ShardingArg& out_sharding = {});
/** x shuffled along `axis` (jax.random.permutation(key, x)): one permutation of
 *  whole slices, or with `independent` each 1-D slice on its own. Without
 *  out_sharding `axis` must be unsharded (the shuffle sorts along it); with it, the
 *  shuffle runs replicated and the result is laid out as asked (JAX's auto_axes).
 *  Same values as JAX's sort-based shuffle. */
Array permutation(const Array& key, const Array& x, int axis = 0, bool independent = false,
                  const ShardingArg& out_sharding = {});

}  // namespace tsr::random
