// bitcast_convert_type (lax) and Array::view (jnp.ndarray.view): view reshapes the
// last dim around the bitcast so the rank is kept (array_methods.py's _view).
#include "tsr/prims/bitcast.h"
#include "tsr/error.h"
#include "tsr/ops/ops_common.h"

namespace tsr {
using namespace detail;

Array bitcast_convert_type(const Array& x, DType dtype) {
  check_dtype(dtype, "bitcast_convert_type");
  return bind1(std::make_shared<prim::BitcastConvertType>(dtype), {x});
}

Array Array::view(DType dtype) const {
  const Array& x = *this;
  check_dtype(dtype, "view");
  if (x.dtype() == dtype) return x;
  const int64_t in_bits = 8 * itemsize(x.dtype()), out_bits = 8 * itemsize(dtype);
  if (x.ndim() == 0) {
    if (in_bits != out_bits)
      throw ValueError(
          "[view] view() of a 0d array is only supported if the itemsize is unchanged. Got " +
          x.type().str() + " viewed as " + dtype_name(dtype) + "; expected a dtype of " +
          std::to_string(in_bits / 8) + " bytes. Reshape to rank 1 first.");
    return reshape({1}).view(dtype).reshape({});
  }
  const int64_t last = x.shape().back();
  if ((last * in_bits) % out_bits != 0)
    throw ValueError(
        "[view] When changing to a larger dtype, its size must be a divisor of the total size "
        "in bytes of the last axis of the array. Got " +
        x.type().str() + " viewed as " + dtype_name(dtype) + " (" + std::to_string(last) + " * " +
        std::to_string(in_bits / 8) + " bytes is not a multiple of " +
        std::to_string(out_bits / 8) +
        "); expected a last dim whose bytes divide evenly. Pad "
        "or slice the last dim first.");
  // lax.bitcast_convert_type refuses bool: go through uint8 (bool is one byte).
  if (x.dtype() == DType::Bool) return x.astype(DType::UInt8).view(dtype);
  if (dtype == DType::Bool) return x.view(DType::UInt8).astype(DType::Bool);
  Shape s = x.shape();
  if (in_bits < out_bits) {
    int64_t f = out_bits / in_bits;
    s.back() = last / f;
    s.push_back(f);
    return bitcast_convert_type(x.reshape(s), dtype);
  }
  Array out = bitcast_convert_type(x, dtype);
  if (in_bits == out_bits) return out;
  s.back() = last * (in_bits / out_bits);
  return out.reshape(s);
}

}  // namespace tsr
