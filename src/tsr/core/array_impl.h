#pragma once
// What an Array handle points at: its type, its concrete sharding (normalized to
// the rank) and one buffer per device of the sharding's mesh, in row-major order.
#include <vector>

#include "tsr/array.h"
#include "tsr/runtime/runtime.h"

namespace tsr::detail {

struct ArrayImpl {
  ArrayType type;
  NamedSharding sharding;
  std::vector<BufferPtr> buffers;
};

/** Makes an array from its parts; derives the type from the sharding. */
Array make_array(const Shape& shape, DType dtype, const NamedSharding& sharding,
                 std::vector<BufferPtr> buffers, bool weak = false);
/** Moves x to `dst` (concrete, rank-normalized, validated) with collectives. */
Array reshard_to(const Array& x, const NamedSharding& dst);

}  // namespace tsr::detail
