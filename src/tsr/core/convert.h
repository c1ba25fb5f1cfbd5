#pragma once
// Element conversion between any two dtypes (host-side reads and casts), and the
// one-element rule the CPU kernels share with it.
#include <cstdint>

#include "tsr/backends/common/scalar_ops.h"
#include "tsr/dtype.h"

namespace tsr::detail {

/** One element from From to To (bool or a built-in arithmetic type, never a half
 *  type): backends/common/scalar_ops.h's cast, which the CUDA kernels share. */
template <typename To, typename From>
inline To cast_element(From v) {
  return ops::cast<To, From>(v);
}

/** dst[i] = src[i] converted by cast_element; half types go through float. */
void convert(const void* src, DType from, void* dst, DType to, int64_t n);

}  // namespace tsr::detail
