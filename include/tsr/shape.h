#pragma once
/** Shapes: a list of dimension sizes, row-major. */
#include <cstdint>
#include <string>
#include <vector>

namespace tsr {

/** Dimension sizes, outermost first. A scalar has the empty shape. */
using Shape = std::vector<int64_t>;

/** Number of elements (1 for a scalar); ValueError on a negative size or an
 *  element count past int64 (shapes are checked where they enter, so this is a backstop). */
int64_t numel(const Shape& shape);
/** The one check of a shape entering the library: every size >= 0 and the element
 *  count and byte size (`itemsize` bytes each) fit int64; ValueError naming `op`
 *  otherwise. Returns the element count. */
int64_t check_shape(const Shape& shape, const char* op, int64_t itemsize = 1);
/** numel(shape) * itemsize, overflow-checked like check_shape. */
int64_t checked_nbytes(const Shape& shape, int64_t itemsize, const char* op);
/** Prints like Python's tuple: "(8, 4)", "(8,)", "()". */
std::string shape_str(const Shape& shape);

}  // namespace tsr
