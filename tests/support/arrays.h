#pragma once
// Small test inputs and comparisons shared by the shard_map / collective / vmap tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "support/gather.h"
#include "tsr/tsr.h"

namespace test {

/** A float32 ramp of shape s, row-major: start, start + step, start + 2 step, ... */
inline tsr::Array ramp(const tsr::Shape& s, double step, double start) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return tsr::reshape(tsr::arange(0, static_cast<double>(n)) * step + start, s)
      .astype(tsr::float32);
}

/** x's whole value as T on every process, as x.to_vector<T>() reads it in one process
 *  (a collective under mpirun: see gathered). */
template <class T>
std::vector<T> values(const tsr::Array& x) {
  return gathered(x).to_vector<T>();
}

/** x's one element as T on every process (see values). */
template <class T>
T item(const tsr::Array& x) {
  return values<T>(x).at(0);
}

/** EXPECTs equal shapes and every element of got within tol of want (under mpirun,
 *  on every process: see values). */
inline void expect_close(const tsr::Array& want, const tsr::Array& got, double tol,
                         const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  const auto a = values<double>(want), b = values<double>(got);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << what << " at " << i;
}

/** Part k (of length `size`) of b along `dim`. */
inline tsr::Array chunk(const tsr::Array& b, int dim, int64_t k, int64_t size) {
  tsr::Shape start(static_cast<size_t>(b.ndim()), 0), limit = b.shape();
  start[static_cast<size_t>(dim)] = k * size;
  limit[static_cast<size_t>(dim)] = (k + 1) * size;
  return tsr::slice(b, start, limit);
}

/** The elementwise sum of equal-shaped blocks, in their dtype. */
inline tsr::Array sum_of(const std::vector<tsr::Array>& bs) {
  return tsr::sum(tsr::stack(bs, 0), 0).astype(bs[0].dtype());
}

}  // namespace test
