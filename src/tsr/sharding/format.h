#pragma once
// Python-style renderings used in error messages, so texts match the spec's
// catalog: ('x', 'y'), (4, 2), (Explicit,), {'x', 'y'}.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tsr/mesh.h"
#include "tsr/sharding.h"

namespace tsr::detail {

/** ('x', 'y'); a 1-tuple is ('x',). */
std::string names_tuple(const std::vector<std::string>& names);
/** (Explicit, Auto). */
std::string types_tuple(const std::vector<AxisType>& types);
/** (4, 2); a 1-tuple is (4,). */
std::string ints_tuple(const std::vector<int64_t>& v);
/** (4, 2) from ints. */
std::string ints_tuple(const std::vector<int>& v);
/** {'x', 'y'} in sorted order. */
std::string quoted_set(const std::set<std::string>& s);

}  // namespace tsr::detail

namespace tsr::detail {
/** "sum", "max" or "min", as JAX prints UnreducedKind. */
const char* unreduced_kind_name(UnreducedKind k);
}  // namespace tsr::detail
