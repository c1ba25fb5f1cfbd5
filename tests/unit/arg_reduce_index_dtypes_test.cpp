// The CPU argmax / argmin kernel writes every integer index dtype (int32 and int64
// directly, the others through an int64 block): the same indices, NaN first.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tsr/backends/kernel.h"
#include "tsr/core/convert.h"
#include "tsr/prims/reduction.h"

namespace tsr::detail {
namespace {

std::vector<int64_t> run_arg(bool max, DType index, const std::vector<float>& x, Shape shape,
                             int axis) {
  prim::ArgReduce p(max, axis, index);
  Shape out_shape = shape;
  out_shape.erase(out_shape.begin() + axis);
  std::vector<LocalType> in = {{shape, DType::Float32}}, out = {{out_shape, index}};
  std::vector<unsigned char> o(static_cast<size_t>(numel(out_shape) * itemsize(index)));
  const void* ip[] = {x.data()};
  void* op[] = {o.data()};
  KernelArgs k;
  k.prim = &p;
  k.in = &in;
  k.out = &out;
  k.in_ptr = ip;
  k.out_ptr = op;
  find_kernel("argmax", "cpu")(k);
  std::vector<int64_t> r(static_cast<size_t>(numel(out_shape)));
  convert(o.data(), index, r.data(), DType::Int64, numel(out_shape));
  return r;
}

TEST(ArgReduceIndexDtypes, EveryIntegerIndexDtypeGivesTheSameIndices) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // [2, 3, 4]: reduced along each axis (columns, rows, and the inner axis).
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 7) % 11);
  x[9] = nan;
  for (int axis = 0; axis < 3; ++axis)
    for (bool max : {true, false}) {
      const auto want = run_arg(max, DType::Int32, x, {2, 3, 4}, axis);
      for (DType t : {DType::Int8, DType::Int16, DType::Int64, DType::UInt8, DType::UInt16,
                      DType::UInt32, DType::UInt64})
        EXPECT_EQ(run_arg(max, t, x, {2, 3, 4}, axis), want)
            << dtype_name(t) << " axis " << axis << (max ? " max" : " min");
    }
}

}  // namespace
}  // namespace tsr::detail
