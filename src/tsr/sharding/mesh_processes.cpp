// Meshes and shardings over many processes (mesh.h, sharding.h): this process's part
// of a mesh, and JAX's hybrid mesh with processes as granules.
#include <climits>
#include <map>
#include <sstream>

#include "tsr/distributed.h"
#include "tsr/error.h"
#include "tsr/mesh.h"
#include "tsr/sharding.h"

namespace tsr {
namespace {

std::string shape_of(const std::vector<int>& v) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
  return os.str();
}

int64_t product(const std::vector<int>& v) {
  int64_t p = 1;
  for (int x : v) p *= x;
  return p;
}

// The concrete mesh of s; ValueError naming `api` for a sharding on an abstract mesh.
const Mesh& devices_of(const NamedSharding& s, const char* api) {
  if (!s.concrete_mesh())
    throw ValueError(std::string("[") + api + "] the sharding " + s.str() +
                     " has no devices. Got a sharding on an abstract mesh; expected one on a "
                     "concrete Mesh. Build the NamedSharding from a Mesh.");
  return *s.concrete_mesh();
}

}  // namespace

std::vector<Device> Mesh::local_devices() const {
  std::vector<Device> out;
  for (const auto& d : devices())
    if (d.process_index() == process_index()) out.push_back(d);
  return out;
}

bool Mesh::is_multi_process() const {
  for (const auto& d : devices())
    if (d.process_index() != devices()[0].process_index()) return true;
  return false;
}

Mesh Mesh::local_mesh() const {
  if (!is_multi_process() && !empty() && devices()[0].process_index() == process_index())
    return *this;
  const int n = ndim();
  std::vector<int> lo(static_cast<size_t>(n), INT_MAX), hi(static_cast<size_t>(n), -1);
  bool any = false;
  for (int i = 0; i < size(); ++i) {
    if (devices()[static_cast<size_t>(i)].process_index() != process_index()) continue;
    any = true;
    auto c = coords(i);
    for (int a = 0; a < n; ++a) {
      lo[static_cast<size_t>(a)] = std::min(lo[static_cast<size_t>(a)], c[static_cast<size_t>(a)]);
      hi[static_cast<size_t>(a)] = std::max(hi[static_cast<size_t>(a)], c[static_cast<size_t>(a)]);
    }
  }
  if (!any)
    throw ValueError("[local_mesh] this process has no device of " + str() + ". Got process " +
                     std::to_string(process_index()) +
                     "; expected a mesh with some of its devices. Pass a mesh over every "
                     "process's devices.");
  std::vector<int> sizes(static_cast<size_t>(n));
  for (int a = 0; a < n; ++a)
    sizes[static_cast<size_t>(a)] = hi[static_cast<size_t>(a)] - lo[static_cast<size_t>(a)] + 1;
  // The block's devices in row-major order; each must be this process's.
  std::vector<Device> devs;
  std::vector<int> c(lo);
  for (int64_t k = 0; k < product(sizes); ++k) {
    int64_t rem = k, flat = 0;
    for (int a = n - 1; a >= 0; --a) {
      c[static_cast<size_t>(a)] =
          lo[static_cast<size_t>(a)] + static_cast<int>(rem % sizes[static_cast<size_t>(a)]);
      rem /= sizes[static_cast<size_t>(a)];
    }
    for (int a = 0; a < n; ++a)
      flat = flat * axis_sizes()[static_cast<size_t>(a)] + c[static_cast<size_t>(a)];
    const Device& d = devices()[static_cast<size_t>(flat)];
    if (d.process_index() != process_index())
      throw ValueError(
          "[local_mesh] When passing host local inputs to pjit, devices connected to a single "
          "host must form a contiguous subcube of the global device mesh. Got device " +
          std::to_string(d.id) + " of process " + std::to_string(d.process_index()) +
          " inside process " + std::to_string(process_index()) + "'s block of " + str() +
          "; expected only this process's devices there. Order the mesh's devices "
          "process-major (make_mesh and create_device_mesh do).");
    devs.push_back(d);
  }
  return Mesh(devs, sizes, axis_names(), axis_types());
}

std::vector<Device> create_hybrid_device_mesh(const std::vector<int>& mesh_shape,
                                              const std::vector<int>& dcn_mesh_shape,
                                              const std::vector<Device>& devices0,
                                              bool process_is_granule) {
  std::vector<Device> devs = devices0.empty() ? devices() : devices0;
  if (!process_is_granule)
    throw ValueError("[create_hybrid_device_mesh] Device " + devs.at(0).str() +
                     " does not have attribute slice_index. See `process_is_granule` option. "
                     "Got process_is_granule=false; expected true for CPU devices (each "
                     "process is a granule).");
  if (mesh_shape.size() != dcn_mesh_shape.size())
    throw ValueError("[create_hybrid_device_mesh] mesh_shape " + shape_of(mesh_shape) +
                     " and dcn_mesh_shape " + shape_of(dcn_mesh_shape) +
                     " have different ranks. Got that; expected one entry per mesh axis in "
                     "each. Use 1 where an axis does not span granules (or devices).");
  std::map<int, std::vector<Device>> granules;
  for (const auto& d : devs) granules[d.process_index()].push_back(d);
  if (static_cast<int64_t>(granules.size()) != product(dcn_mesh_shape))
    throw ValueError("[create_hybrid_device_mesh] Number of slices " +
                     std::to_string(granules.size()) +
                     " must equal the product of dcn_mesh_shape " + shape_of(dcn_mesh_shape) +
                     ". Got that many processes among the devices; expected prod(dcn_mesh_"
                     "shape). Give dcn_mesh_shape one entry per process grid axis.");
  std::vector<std::vector<Device>> per;
  for (auto& [p, g] : granules) per.push_back(create_device_mesh(mesh_shape, g));
  const size_t n = mesh_shape.size();
  std::vector<int> out_shape(n);
  for (size_t i = 0; i < n; ++i) out_shape[i] = dcn_mesh_shape[i] * mesh_shape[i];
  std::vector<Device> out;
  for (int64_t k = 0; k < product(out_shape); ++k) {
    std::vector<int> r(n);
    int64_t rem = k;
    for (size_t i = n; i-- > 0;) {
      r[i] = static_cast<int>(rem % out_shape[i]);
      rem /= out_shape[i];
    }
    int64_t g = 0, in = 0;
    for (size_t i = 0; i < n; ++i) {
      g = g * dcn_mesh_shape[i] + r[i] / mesh_shape[i];
      in = in * mesh_shape[i] + r[i] % mesh_shape[i];
    }
    out.push_back(per[static_cast<size_t>(g)][static_cast<size_t>(in)]);
  }
  return out;
}

bool NamedSharding::is_fully_addressable() const {
  for (const auto& d : devices_of(*this, "is_fully_addressable").devices())
    if (d.process_index() != process_index()) return false;
  return true;
}

std::vector<Device> NamedSharding::addressable_devices() const {
  return devices_of(*this, "addressable_devices").local_devices();
}

bool NamedSharding::has_addressable_devices() const { return !addressable_devices().empty(); }

std::vector<std::pair<Device, ShardIndex>> NamedSharding::addressable_devices_indices_map(
    const Shape& global_shape) const {
  std::vector<std::pair<Device, ShardIndex>> out;
  for (auto& [d, idx] : devices_indices_map(global_shape))
    if (d.process_index() == process_index()) out.emplace_back(d, idx);
  return out;
}

}  // namespace tsr
