#pragma once
// Element conversion between any two dtypes (host-side reads and casts).
#include <cstdint>

#include "tsr/dtype.h"

namespace tsr::detail {

/** dst[i] = static_cast<to>(src[i]) for n elements; half types go through float. */
void convert(const void* src, DType from, void* dst, DType to, int64_t n);

}  // namespace tsr::detail
