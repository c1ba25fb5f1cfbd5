#include "tsr/shape.h"

#include <limits>

#include "tsr/error.h"

namespace tsr {

int64_t check_shape(const Shape& shape, const char* op, int64_t itemsize) {
  for (int64_t d : shape)
    if (d < 0)
      throw ValueError(std::string("[") + op + "] negative dimension size. Got shape " +
                       shape_str(shape) +
                       "; expected every size >= 0. Pass non-negative sizes (only reshape "
                       "takes a single -1, meaning \"inferred\").");
  // As NumPy, zero sizes are skipped while checking, so a product that overflows
  // before a zero is refused too: strides over the other dims would overflow.
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(n, d, &n)) {
      throw ValueError(std::string("[") + op + "] the element count of shape " + shape_str(shape) +
                       " overflows int64. Got sizes whose product exceeds " +
                       std::to_string(std::numeric_limits<int64_t>::max()) +
                       "; expected a product that fits int64. Use smaller sizes.");
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, itemsize, &bytes))
    throw ValueError(std::string("[") + op + "] the byte size of shape " + shape_str(shape) +
                     " overflows int64. Got " + std::to_string(n) + " elements of " +
                     std::to_string(itemsize) + " bytes; expected at most " +
                     std::to_string(std::numeric_limits<int64_t>::max()) +
                     " bytes. Use smaller sizes or a narrower dtype.");
  return empty ? 0 : n;
}

int64_t checked_nbytes(const Shape& shape, int64_t itemsize, const char* op) {
  return check_shape(shape, op, itemsize) * itemsize;
}

int64_t numel(const Shape& shape) { return check_shape(shape, "numel"); }

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

}  // namespace tsr
