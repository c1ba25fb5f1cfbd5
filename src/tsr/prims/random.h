#pragma once
// Counter-based random primitives (threefry2x32, as JAX with
// jax_threefry_partitionable=True). Element i of a sampled array hashes the
// counter (hi32(i), lo32(i)) of its global row-major index, so each device
// computes only its own block and values never depend on the sharding.
#include <cstdint>

#include "tsr/core/primitive.h"
#include "tsr/prims/creation.h"

namespace tsr::prim {

/** What a random_* primitive samples. */
enum class RandomDist : uint8_t {
  Bits,    /**< random_bits: out0 ^ out1 (its low 8/16 bits), or out0 << 32 | out1 for uint64 */
  Uniform, /**< random_uniform: max(lo, u * (hi - lo) + lo), u from the dtype's bit width */
  RandInt, /**< random_randint: jax.random.randint's two-key modular rule */
};

/** random_bits / random_uniform / random_randint(key): input a uint32[2] key
 *  (read replicated); output `shape` of `dtype`, placed like a creation op. */
class RandomBits : public detail::Primitive {
 public:
  /** dist, shape, dtype, the range (float for Uniform, integer for RandInt), placement. */
  RandomBits(RandomDist dist, Shape shape, DType dtype, double flo, double fhi, int64_t ilo,
             int64_t ihi, Placed where)
      : dist_(dist),
        shape_(std::move(shape)),
        dtype_(dtype),
        flo_(flo),
        fhi_(fhi),
        ilo_(ilo),
        ihi_(ihi),
        where_(std::move(where)) {}
  /** The distribution. */
  RandomDist dist() const { return dist_; }
  /** Global output shape. */
  const Shape& shape() const { return shape_; }
  /** Uniform range [minval, maxval). */
  double fmin() const { return flo_; }
  /** Uniform upper bound. */
  double fmax() const { return fhi_; }
  /** RandInt range [minval, maxval). */
  int64_t imin() const { return ilo_; }
  /** RandInt upper bound. */
  int64_t imax() const { return ihi_; }
  const char* name() const override;
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  const Mesh* placement_mesh() const override { return where_.mesh ? &*where_.mesh : nullptr; }

 private:
  RandomDist dist_;
  Shape shape_;
  DType dtype_;
  double flo_, fhi_;
  int64_t ilo_, ihi_;
  Placed where_;
};

/** threefry2x32(key, x0, x1) -> (y0, y1): the 20-round hash of each counter pair
 *  (x0, x1 uint32 of one shape) under a uint32[2] key (read replicated); the
 *  outputs are sharded like the counters (JAX's threefry2x32_p). */
class Threefry2x32 : public detail::Primitive {
 public:
  const char* name() const override { return "threefry2x32"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
};

}  // namespace tsr::prim

namespace tsr::detail {
/** Raises TypeError unless t is a raw threefry key: uint32 of shape (2,). */
void check_key(const ArrayType& t, const char* api);
}  // namespace tsr::detail
