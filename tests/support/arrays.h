#pragma once
// Small test inputs and comparisons shared by the shard_map / collective / vmap tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "tsr/tsr.h"

namespace test {

/** A float32 ramp of shape s, row-major: start, start + step, start + 2 step, ... */
inline tsr::Array ramp(const tsr::Shape& s, double step, double start) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return tsr::reshape(tsr::arange(0, static_cast<double>(n)) * step + start, s)
      .astype(tsr::float32);
}

/** x's whole value as T on every process, as x.to_vector<T>() reads it in one process.
 *  Under mpirun this is a collective every process makes at the same point: an array
 *  spanning processes is gathered, and one that only other processes hold is broadcast
 *  from the first of them (so a test asserts alike on every process). */
template <class T>
std::vector<T> values(const tsr::Array& x) {
  if (tsr::process_count() == 1) return x.to_vector<T>();
  tsr::MeshScope no_mesh{tsr::Mesh()};  // the reshapes below stay on this process
  std::optional<tsr::Array> whole;
  if (x.is_fully_addressable()) {
    whole = x;
  } else {
    bool here = false;
    for (const auto& d : x.sharding().concrete_mesh()->devices())
      here = here || d.process_index() == tsr::process_index();
    if (here) whole = tsr::multihost::process_allgather(x, true).reshape(x.shape());
  }
  const auto me = tsr::local_devices()[0];
  auto has = tsr::multihost::process_allgather(tsr::scalar(whole ? 1 : 0, me)).to_vector<int>();
  if (std::count(has.begin(), has.end(), 1) == static_cast<long>(has.size()))
    return whole->to_vector<T>();
  const int src = static_cast<int>(std::find(has.begin(), has.end(), 1) - has.begin());
  tsr::Array mine = whole ? tsr::device_put(*whole, me) : tsr::zeros(x.shape(), x.dtype(), me);
  return tsr::multihost::broadcast_one_to_all(mine, tsr::process_index() == src).to_vector<T>();
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
