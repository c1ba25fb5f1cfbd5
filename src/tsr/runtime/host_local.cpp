// multihost::host_local_array_to_global_array and its inverse (multihost.h): a process's
// piece, split over the mesh's local block, as the global array and back.
#include "tsr/core/array_impl.h"
#include "tsr/error.h"
#include "tsr/multihost.h"

namespace tsr::multihost {
namespace {

const PartitionSpec& given(const std::optional<PartitionSpec>& pspec, const char* op) {
  if (!pspec)
    throw ValueError(std::string("[") + op +
                     "] `None` is not a valid input to the pspecs argument. Please use "
                     "jax.sharding.PartitionSpec() if you wanted to replicate your input. Got "
                     "no pspec; expected a PartitionSpec (P() replicates).");
  return *pspec;
}

// The product of the sizes of the axes of dim d's spec entry on `m`.
int64_t axes_size(const PartitionSpec& spec, int d, const Mesh& m) {
  int64_t n = 1;
  if (d < static_cast<int>(spec.entries().size()))
    for (const auto& a : spec.entries()[static_cast<size_t>(d)].axes()) n *= m.axis_size(a);
  return n;
}

}  // namespace

Array host_local_array_to_global_array(const Array& local, const Mesh& global_mesh,
                                       const std::optional<PartitionSpec>& pspec) {
  const char* op = "host_local_array_to_global_array";
  const PartitionSpec& spec = given(pspec, op);
  detail::check_concrete(local, op);
  if (!local.is_fully_addressable()) return local;
  const Mesh lm = global_mesh.local_mesh();
  Shape global = local.shape();
  for (int d = 0; d < local.ndim(); ++d) {
    const int64_t here = axes_size(spec, d, lm), all = axes_size(spec, d, global_mesh);
    if (global[static_cast<size_t>(d)] % here != 0)
      throw ValueError(std::string("[") + op + "] dimension " + std::to_string(d) + " of size " +
                       std::to_string(global[static_cast<size_t>(d)]) +
                       " does not split over this process's " + std::to_string(here) +
                       " devices along " + spec.repr() + ". Got shape " + shape_str(local.shape()) +
                       "; expected a multiple of " + std::to_string(here) +
                       ". Pad or resize the local piece.");
    global[static_cast<size_t>(d)] = global[static_cast<size_t>(d)] / here * all;
  }
  return make_array_from_process_local_data(NamedSharding(global_mesh, spec), local, global);
}

Array global_array_to_host_local_array(const Array& global, const Mesh& global_mesh,
                                       const std::optional<PartitionSpec>& pspec) {
  const char* op = "global_array_to_host_local_array";
  const PartitionSpec& spec = given(pspec, op);
  detail::check_concrete(global, op);
  if (global.is_fully_addressable()) return global;
  const int rank = global.ndim();
  const NamedSharding gs = NamedSharding(global_mesh, spec).normalized(rank);
  Array x = global.impl()->sharding() == gs ? global : device_put(global, gs);
  const Mesh lm = global_mesh.local_mesh();
  Shape local = global.shape();
  for (int d = 0; d < rank; ++d)
    local[static_cast<size_t>(d)] =
        local[static_cast<size_t>(d)] / axes_size(spec, d, global_mesh) * axes_size(spec, d, lm);
  // This process's buffers, rewrapped on the local block: no copy.
  std::vector<detail::BufferPtr> bufs;
  for (const auto& d : lm.devices())
    bufs.push_back(x.impl()->buffers[static_cast<size_t>(global_mesh.index_of(d))]);
  return detail::make_array(local, x.dtype(), NamedSharding(lm, spec).normalized(rank),
                            std::move(bufs), x.type().weak);
}

}  // namespace tsr::multihost
