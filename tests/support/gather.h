#pragma once
// An array's whole value on this process, whatever processes hold it: what tests and the
// fuzzer compare. No gtest here (the fuzzer includes it).
#include <algorithm>
#include <optional>

#include "tsr/tsr.h"

namespace test {

/** x's whole value on this process's first device. In one process, x itself. Under
 *  mpirun a collective every process makes at the same point: an array spanning
 *  processes is gathered, one that only other processes hold is broadcast from the
 *  first of them (so every process compares, and decides, alike). */
inline tsr::Array gathered(const tsr::Array& x) {
  if (tsr::process_count() == 1) return x;
  tsr::MeshScope no_mesh{tsr::Mesh()};  // the results stay on this process
  std::optional<tsr::Array> whole;
  if (x.is_fully_addressable()) {
    whole = x;
  } else if (x.sharding().has_addressable_devices()) {
    whole = tsr::multihost::process_allgather(x, true).reshape(x.shape());
  }
  const auto me = tsr::local_devices()[0];
  auto has = tsr::multihost::process_allgather(tsr::scalar(whole ? 1 : 0, me)).to_vector<int>();
  if (std::count(has.begin(), has.end(), 1) == static_cast<long>(has.size())) return *whole;
  const int src = static_cast<int>(std::find(has.begin(), has.end(), 1) - has.begin());
  tsr::Array mine = whole ? tsr::device_put(*whole, me) : tsr::zeros(x.shape(), x.dtype(), me);
  return tsr::multihost::broadcast_one_to_all(mine, tsr::process_index() == src);
}

}  // namespace test
