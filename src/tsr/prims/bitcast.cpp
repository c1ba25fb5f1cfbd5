// Rule of bitcast_convert_type (jax/_src/lax/lax.py: shape, dtype and sharding rules).
#include "tsr/prims/bitcast.h"

#include "tsr/prims/common.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("bitcast_convert_type") &&
    declare_ad("bitcast_convert_type", AdKind::NonDifferentiable,
               "a reinterpretation of bits is not a smooth function (JAX: defjvp_zero)");
}  // namespace

std::vector<ArrayType> BitcastConvertType::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  const int old_bits = 8 * itemsize(x.dtype), new_bits = 8 * itemsize(dtype_);
  if ((x.dtype == DType::Bool || dtype_ == DType::Bool || is_complex(x.dtype) ||
       is_complex(dtype_)) &&
      x.dtype != dtype_)
    throw TypeError(
        "[bitcast_convert_type] tsr::bitcast_convert_type does not support bool or complex values "
        "unless the operand and destination types match. Got operand dtype=" +
        std::string(dtype_name(x.dtype)) + ", new_dtype=" + dtype_name(dtype_) +
        "; expected two non-bool, non-complex dtypes. Consider using the arr.view() method instead "
        "(Array::view), or compare with 0 / astype for a value conversion.");
  Shape shape = x.shape;
  std::vector<PartitionEntry> e = entries_of(x);
  if (new_bits < old_bits) {
    shape.push_back(old_bits / new_bits);
    e.emplace_back();
  } else if (new_bits > old_bits) {
    int64_t dim = x.shape.empty() ? 1 : x.shape.back();
    if (dim * old_bits != new_bits)
      throw ValueError("[bitcast_convert_type] Attempting to convert array of shape " +
                       shape_str(x.shape) + " from " + dtype_name(x.dtype) + " of size " +
                       std::to_string(old_bits) + " bits to " + dtype_name(dtype_) + " of size " +
                       std::to_string(new_bits) + ", bits but " + std::to_string(dim) + " * " +
                       std::to_string(old_bits) + " != " + std::to_string(new_bits) +
                       ". Got operand " + x.str() + "; expected a last dim of " +
                       std::to_string(new_bits / old_bits) +
                       ". Reshape so the last dim holds one wider element's parts, or use "
                       "view(), which does that reshape.");
    if (!e.back().is_none())
      throw ShardingTypeError(
          "[bitcast_convert_type] the last dim is merged into the wider " +
          std::string(dtype_name(dtype_)) +
          " elements, so it must not be sharded: each element's bytes must be on one device. "
          "Got operand " +
          x.str() + "; expected its last dim unsharded. Reshard it first, e.g. reshard(x, " +
          spec_of(std::vector<PartitionEntry>(e.begin(), e.end() - 1)).repr() + ").");
    shape.pop_back();
    e.pop_back();
  }
  // Partial values (unreduced) sum after the bitcast, and the bits of a sum are not
  // the sum of the bits: refused unless nothing changes.
  if (!unreduced_of(x).empty() && x.dtype != dtype_)
    throw ShardingTypeError(
        "[bitcast_convert_type] an unreduced value cannot be bitcast from " +
        std::string(dtype_name(x.dtype)) + " to " + dtype_name(dtype_) +
        ": each device would reinterpret its partial value, and reinterpreted partials do not "
        "add up to the reinterpreted sum. Got operand " +
        x.str() + "; expected no unreduced axes. Reduce it first with reshard(x, " +
        spec_of(entries_of(x)).repr() + ").");
  return {make_type(shape, dtype_, false, rule_mesh(in), e, x.sharding.spec())};
}

Lowering BitcastConvertType::partition(const std::vector<ArrayType>& in,
                                       const std::vector<ArrayType>& out) const {
  // Same blocks in and out (the changed dim is unsharded): the bytes do not move.
  return {{in[0].sharding.spec()}, {out[0].sharding.spec()}};
}

std::string BitcastConvertType::params() const {
  return std::string("new_dtype=") + dtype_name(dtype_);
}

// The same bits read as another type: a zero tangent (JAX: defjvp_zero).
std::vector<Array> BitcastConvertType::jvp(const std::vector<Array>&, const std::vector<Array>&,
                                           std::vector<Array>&) const {
  return {Array()};
}

// Batching (vmap): the batch at 0 leaves the trailing dimension a width change adds or
// removes where it was.
detail::Batched BitcastConvertType::batch(const std::vector<Array>& args,
                                          const std::vector<int>& dims) const {
  return detail::batch_unary_front(shared_from_this(), args[0], dims[0]);
}

}  // namespace tsr::prim
