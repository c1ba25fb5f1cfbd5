#pragma once
/** Shapes: a list of dimension sizes, row-major. */
#include <cstdint>
#include <string>
#include <vector>

namespace tsr {

/** Dimension sizes, outermost first. A scalar has the empty shape. */
using Shape = std::vector<int64_t>;

/** Number of elements (1 for a scalar). */
int64_t numel(const Shape& shape);
/** Prints like Python's tuple: "(8, 4)", "(8,)", "()". */
std::string shape_str(const Shape& shape);

}  // namespace tsr
