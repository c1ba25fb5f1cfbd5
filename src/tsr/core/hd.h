#pragma once
// Host / device qualifiers for the scalar headers that the CPU kernels, the CUDA
// kernels (nvcc) and the fused kernels NVRTC compiles at run time all include, so
// an element's value is computed by one piece of code on every platform.
#if defined(__CUDACC__)
#define TSR_HD __host__ __device__ __forceinline__
#else
#define TSR_HD inline
#endif

#if defined(__CUDACC_RTC__)
// NVRTC has no standard headers: the fixed-width types the scalar headers use.
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#else
#include <bit>
#include <cstdint>
#endif

namespace tsr::detail {

/** The bits of a float (bit_cast on the host, the intrinsic on a GPU). */
TSR_HD uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}

/** The float with these bits. */
TSR_HD float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

}  // namespace tsr::detail
