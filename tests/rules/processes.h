#pragma once
// The table tests under mpirun (tests/support/init.cpp joins the processes): oracles
// on this process's own devices, and results read whole with a gather when they span
// processes. In one process these are make_mesh and to_vector.
#include <string>
#include <vector>

#include "tsr/tsr.h"

namespace rules {

/** A mesh of this process's first devices (Explicit axes unless `types` says):
 *  what every process can read. */
inline tsr::Mesh local_mesh(const std::vector<int>& sizes, const std::vector<std::string>& names,
                            std::vector<tsr::AxisType> types = {}) {
  int n = 1;
  for (int s : sizes) n *= s;
  auto local = tsr::local_devices();
  if (types.empty()) types.assign(names.size(), tsr::AxisType::Explicit);
  return tsr::Mesh(std::vector<tsr::Device>(local.begin(), local.begin() + n), sizes, names, types);
}

/** A case's mesh: make_mesh, except that under mpirun one that fits in this process
 *  stays on its devices (the 8-device meshes span the processes). */
inline tsr::Mesh case_mesh(const std::vector<int>& sizes, const std::vector<std::string>& names,
                           const std::vector<tsr::AxisType>& types = {}) {
  int n = 1;
  for (int s : sizes) n *= s;
  if (tsr::process_count() == 1 || n > tsr::local_device_count())
    return types.empty() ? tsr::make_mesh(sizes, names) : tsr::make_mesh(sizes, names, types);
  return local_mesh(sizes, names, types);
}

/** x's whole value: gathered first (a collective every process makes at the same
 *  point) when it spans processes. */
inline std::vector<double> host_value(const tsr::Array& x) {
  if (x.is_fully_addressable()) return x.to_vector<double>();
  return tsr::multihost::process_allgather(x, true).to_vector<double>();
}

}  // namespace rules
