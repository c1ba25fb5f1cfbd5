#pragma once
// The scalar headers NVRTC compiles fused kernels with, embedded in the library at
// build time (cmake/EmbedHeaders.cmake), so the run-time compile needs no source tree.
#include <vector>

namespace tsr::detail::cuda {

/** One embedded header: the path it is included by, and its text. */
struct EmbeddedHeader {
  const char* name; /**< "tsr/core/hd.h" */
  const char* text; /**< the file's contents */
};

/** Every embedded header (hd.h, half_bits.h, scalar_ops.h, elementwise_ops.h,
 *  elementwise_apply.h). */
const std::vector<EmbeddedHeader>& nvrtc_headers();

}  // namespace tsr::detail::cuda
