#pragma once
// The host half of randint (backends/common/threefry.h has the per-element half):
// the bounds clipped to the integer type and the constants of jax.random.randint's
// arithmetic, computed once per call for the CPU and CUDA kernels alike.
#include "tsr/backends/common/threefry.h"
#include "tsr/dtype.h"
#include "tsr/prims/random.h"

namespace tsr::detail::rng {

/** randint's plan for integer dtype t (defined in backends/cpu/random.cpp). */
RandIntPlan randint_plan(const prim::RandomBits& p, DType t);

}  // namespace tsr::detail::rng
