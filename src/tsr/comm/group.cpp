#include "tsr/comm/group.h"

#include <string>

#include "tsr/error.h"

namespace tsr::detail {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Prod:
      return "prod";
  }
  return "unknown";
}

void Group::complex_op_refused(DType dt, ReduceOp op, const char* what) {
  throw NotImplementedError(
      std::string("[") + what + "] a " + reduce_op_name(op) + " of " + dtype_name(dt) +
      " values is not defined. Got op=" + reduce_op_name(op) + " on " + dtype_name(dt) +
      "; expected op=sum (complex numbers have no order). Reduce the real "
      "and imaginary parts (tsr::real, tsr::imag) separately.");
}

}  // namespace tsr::detail
