#pragma once
// Device-side element access for the CUDA kernels (nvcc only): the half types load
// as float and store rounded to nearest even through core/half_bits.h, so a value
// is bit-identical to the CPU kernels'.
#include "tsr/backends/common/scalar_ops.h"
#include "tsr/backends/cuda/launch.h"
#include "tsr/core/half_bits.h"
#include "tsr/dtype.h"

namespace tsr::detail::cuda {

/** The type an element of stored type S computes in (float for the half types). */
template <typename S>
struct ComputeOf {
  using type = S;
};
template <>
struct ComputeOf<float16_t> {
  using type = float;
};
template <>
struct ComputeOf<bfloat16_t> {
  using type = float;
};
template <typename S>
using Compute = typename ComputeOf<S>::type;

/** An element read in its compute type. */
template <typename S>
__device__ __forceinline__ Compute<S> load(const S& v) {
  return v;
}
template <>
__device__ __forceinline__ float load<float16_t>(const float16_t& v) {
  return half_bits_to_float(v.bits);
}
template <>
__device__ __forceinline__ float load<bfloat16_t>(const bfloat16_t& v) {
  return bf16_bits_to_float(v.bits);
}

/** A compute-type value stored as S (the half types rounded once). */
template <typename S, typename C>
__device__ __forceinline__ S store(C v) {
  if constexpr (__is_same(S, float16_t)) {
    S s;
    s.bits = float_to_half_bits(static_cast<float>(v));
    return s;
  } else if constexpr (__is_same(S, bfloat16_t)) {
    S s;
    s.bits = float_to_bf16_bits(static_cast<float>(v));
    return s;
  } else {
    return static_cast<S>(v);
  }
}

/** The element offset of flat row-major index i over `rank` dims of `size`, read
 *  through `stride`. */
__device__ __forceinline__ int64_t offset_in(int rank, const int64_t* size, const int64_t* stride,
                                             int64_t i) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    int64_t q = i / size[d];
    off += (i - q * size[d]) * stride[d];
    i = q;
  }
  return off;
}

/** Offset of operand k for the output's flat index i. */
__device__ __forceinline__ int64_t offset_of(const Strides& s, int k, int64_t i) {
  return offset_in(s.rank, s.size, s.in[k], i);
}

/** Calls f(U{}) with an unsigned type of `item` bytes (Item16 for 16). */
template <typename F>
void by_item_size(size_t item, F&& f) {
  switch (item) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      return f(Item16{});
  }
}

/** Grid-stride loop over [0, n). */
#define TSR_CUDA_FOR(i, n)                                                               \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

}  // namespace tsr::detail::cuda
