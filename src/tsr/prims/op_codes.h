#pragma once
// The reduction and cumulative op codes, apart from their primitives so that the
// CUDA kernels and the scalar code both backends share can name them (core/hd.h).
#include "tsr/core/hd.h"

namespace tsr::prim {

/** How values combine. */
enum class ReduceKind : uint8_t { Sum, Prod, Max, Min, And, Or };

/** How a cumulative op combines values. */
enum class CumKind : uint8_t { Sum, Prod, Max, Min, LogSumExp };

}  // namespace tsr::prim
