// pmap as sugar over shard_map (manual-spmd §7.3): the checks of jax.pmap (mapped axes,
// one size, devices, axis_size, no nesting), the 1-D mesh over the first N devices,
// the arguments placed on it, and a rank-reducing body run with check_vma=false.
#include <algorithm>
#include <map>
#include <sstream>

#include "tsr/core/trace.h"
#include "tsr/distributed.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/pmap.h"
#include "tsr/prims/common.h"
#include "tsr/shard_map.h"

namespace tsr::detail {

namespace {

std::string ids_str(const std::vector<Device>& ds) {
  std::string s = "[";
  for (size_t i = 0; i < ds.size(); ++i) s += (i ? ", " : "") + std::to_string(ds[i].id);
  return s + "]";
}

// JAX's message for mapped axes of different sizes: the most common size first.
[[noreturn]] void raise_sizes(const std::vector<Array>& args, const std::vector<int>& dims,
                              const std::vector<std::string>& paths) {
  std::map<int64_t, std::vector<size_t>> by;
  for (size_t i = 0; i < args.size(); ++i)
    if (dims[i] >= 0) by[args[i].shape()[dims[i]]].push_back(i);
  std::vector<std::pair<int64_t, std::vector<size_t>>> groups(by.begin(), by.end());
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::ostringstream os;
  os << "[pmap] pmap got inconsistent sizes for array axes to be mapped:";
  for (const auto& [size, idx] : groups) {
    size_t i = idx[0];
    std::string where = "axis " + std::to_string(dims[i]) + " of argument " + paths[i] +
                        " of type " + short_type(args[i].type());
    if (idx.size() > 1)
      os << "\n  * most axes (" << idx.size() << " of them) had size " << size << ", e.g. " << where
         << ";";
    else
      os << "\n  * one axis had size " << size << ": " << where << ";";
  }
  os << "\nExpected one size for every mapped axis (one slice per device). Map arguments of "
        "equal size, or pass none in in_axes for the ones that are broadcast.";
  throw ValueError(os.str());
}

// The dimension each leaf is mapped along (-1: broadcast), checked against its rank.
std::vector<int> mapped_dims(const std::vector<Array>& args, const std::vector<PmapAxis>& in_axes,
                             const std::vector<std::string>& paths) {
  std::vector<int> dims(args.size(), -1);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!in_axes[i]) continue;
    int nd = args[i].ndim(), a = *in_axes[i], d = a < 0 ? a + nd : a;
    if (d < 0 || d >= nd)
      throw ValueError("[pmap] pmap was requested to map its argument along axis " +
                       std::to_string(a) + ", which implies that its rank should be at least " +
                       std::to_string(a < 0 ? -a : a + 1) + ", but is only " + std::to_string(nd) +
                       " (its shape is " + shape_str(args[i].shape()) + "). Got argument " +
                       paths[i] + " of type " + short_type(args[i].type()) +
                       "; expected an axis within its rank. Fix in_axes, or pass none for it.");
    dims[i] = d;
  }
  return dims;
}

// A concrete argument already on devices must be on the pmap's devices: pmap moves
// host (single-device, unplaced) arrays, never arrays laid out on other devices.
Array place(const Array& x, const NamedSharding& want, const std::string& path) {
  const Mesh& mesh = *want.concrete_mesh();
  const AbstractMesh& am = x.type().sharding.mesh();
  if (am.empty()) return x;  // a host array (or traced without a layout): shard_map places it
  // device_put, not reshard: the mesh's axis is Auto (a traced value gets a constraint).
  if (x.impl()->var) return device_put(x, want);
  const std::optional<Mesh>& on = x.sharding().concrete_mesh();
  if (on && *on == mesh)
    return x.sharding().spec().normalized(x.ndim()) == want.spec() ? x : device_put(x, want);
  std::vector<Device> have = on ? on->devices() : std::vector<Device>{};
  std::vector<Device> a = have, b = mesh.devices();
  auto by_id = [](const Device& p, const Device& q) { return p.id < q.id; };
  std::sort(a.begin(), a.end(), by_id);
  std::sort(b.begin(), b.end(), by_id);
  if (a == b) return device_put(x, want);  // same devices, another layout: no data leaves them
  throw ValueError("[pmap] Received incompatible devices for jitted computation. Got argument " +
                   path + " of pmap of type " + short_type(x.type()) + " on device ids " +
                   ids_str(have) + "; expected the pmap's device ids " + ids_str(mesh.devices()) +
                   ". Pass a host array, put it on those devices first, or pass .devices.");
}

PartitionSpec spec_at(const PmapAxis& d, const std::string& name) {
  if (!d) return PartitionSpec();
  std::vector<PartitionEntry> e(static_cast<size_t>(*d));
  e.emplace_back(name);
  return PartitionSpec(e);
}

}  // namespace

void check_pmap_options(const PmapOptions& o) {
  if (o.devices && o.devices->empty())
    throw ValueError(
        "[pmap] 'devices' argument to pmap must be non-empty, or None. Got an empty list; "
        "expected the devices to run on. Leave .devices unset for tsr::devices().");
}

std::vector<Array> pmap_flat(const FlatFn& f, const std::vector<Array>& args0,
                             const std::vector<PmapAxis>& in_axes,
                             const std::vector<std::string>& paths,
                             const std::function<PmapOutAxes()>& out_axes, const PmapOptions& o) {
  const std::string name = o.axis_name.empty() ? kPmapDefaultAxisName : o.axis_name;
  std::vector<int> dims = mapped_dims(args0, in_axes, paths);
  std::optional<int64_t> n;
  for (size_t i = 0; i < args0.size(); ++i) {
    if (dims[i] < 0) continue;
    int64_t s = args0[i].shape()[dims[i]];
    if (n && *n != s) raise_sizes(args0, dims, paths);
    if (!n) n = s;
  }
  if (!n)
    throw ValueError(
        "[pmap] pmap requires at least one argument with a mapped axis. Got every argument "
        "with in_axes none; expected one mapped argument (its axis size is the device "
        "count). Give an argument an in_axes entry.");
  if (o.axis_size && *o.axis_size != *n)
    throw ValueError("[pmap] Specified axis_size " + std::to_string(*o.axis_size) +
                     " doesn't match received axis_size " + std::to_string(*n) +
                     ". Got that axis_size; expected the mapped size. Drop axis_size or fix it.");
  if (process_count() > 1) {
    // JAX's multi-process pmap (a global axis over every process's local devices) is
    // not built: refuse rather than run on another process's devices.
    if (!o.devices)
      throw ValueError("[pmap] pmap over several processes is not supported. Got " +
                       std::to_string(process_count()) +
                       " processes and no .devices; expected one process, or .devices naming "
                       "this process's devices (tsr::local_devices()). For collectives across "
                       "processes use shard_map over a mesh of every device.");
    for (const Device& d : *o.devices)
      if (d.process_index() != o.devices->front().process_index())  // non-empty: checked
        throw ValueError("[pmap] pmap runs on the devices of one process. Got device " +
                         std::to_string(o.devices->front().id) + " of process " +
                         std::to_string(o.devices->front().process_index()) + " and device " +
                         std::to_string(d.id) + " of process " + std::to_string(d.process_index()) +
                         " in .devices; expected devices of one process (tsr::local_devices()). "
                         "Use shard_map over a mesh of every device for collectives across "
                         "processes.");
  }
  std::vector<Device> devs = o.devices ? *o.devices : devices();
  if (*n < 1 || *n > static_cast<int64_t>(devs.size()))
    throw ValueError("[pmap] compiling computation that requires " + std::to_string(*n) +
                     " logical devices, but only " + std::to_string(devs.size()) +
                     " devices are available. Got a mapped axis of size " + std::to_string(*n) +
                     "; expected at least 1 and at most " + std::to_string(devs.size()) +
                     " (one slice per device). Map fewer slices (reshape into an extra axis and "
                     "loop or vmap over it), or start Tessera with more devices.");
  devs.resize(static_cast<size_t>(*n));
  // Auto, as JAX's `Mesh(devices, (axis_name,))`: the results' types do not name the
  // axis (f32[4,5]), their concrete layout is the out_axes' spec (P('i', None)).
  Mesh mesh(devs, {static_cast<int>(*n)}, {name}, {AxisType::Auto});

  // No nesting: inside a shard_map (or pmap) body the context mesh is manual (JAX's
  // shard_map check, which is what nested pmap raises since 0.8).
  const AbstractMesh ctx = get_abstract_mesh();
  for (const auto& t : ctx.axis_types())
    if (t == AxisType::Manual)
      throw ValueError("[pmap] The context mesh " + ctx.str() +
                       " should match the mesh passed to shard_map " + mesh.abstract_mesh().str() +
                       ". Got a pmap inside a pmap or shard_map body; expected pmap outside "
                       "any manual body (nested pmap is not supported). Use one shard_map over "
                       "a 2-D mesh, or nested shard_maps.");

  // pmap's own mesh is the context for the placements and the call (a user's context
  // mesh is not pmap's): a traced argument's constraint is bound on pmap's mesh.
  MeshScope scope(mesh);
  std::vector<Array> args = args0;
  std::vector<std::optional<PartitionSpec>> in_specs;
  for (size_t i = 0; i < args.size(); ++i) {
    PmapAxis d = dims[i] < 0 ? PmapAxis() : PmapAxis(dims[i]);
    PartitionSpec p = spec_at(d, name);
    args[i] = place(args[i], NamedSharding(mesh, p.normalized(args[i].ndim())), paths[i]);
    in_specs.emplace_back(p);
  }

  // The rank-reducing body: slice k arrives as a block with a size-1 mapped dim.
  std::vector<PmapAxis> outs_at;
  FlatFn body = [&](const std::vector<Array>& blocks) {
    std::vector<Array> in(blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i)
      in[i] = dims[i] < 0 ? blocks[i] : squeeze(blocks[i], dims[i]);
    std::vector<Array> outs = f(in);
    PmapOutAxes oa = out_axes();
    outs_at.clear();
    for (size_t j = 0; j < outs.size(); ++j) {
      PmapAxis a = oa.axes[j];
      if (a) {
        int rank = outs[j].ndim() + 1, to = *a < 0 ? *a + rank : *a;
        if (to < 0 || to >= rank)
          throw ValueError(
              "[pmap] out_axes " + std::to_string(*a) + " is out of range for result " +
              oa.paths[j] + " of type " + short_type(outs[j].type()) + ", whose mapped rank is " +
              std::to_string(rank) + ". Got that axis; expected one in [" + std::to_string(-rank) +
              ", " + std::to_string(rank) + "). Fix out_axes.");
        a = to;
        outs[j] = expand_dims(outs[j], to);
      }
      outs_at.push_back(a);
    }
    return outs;
  };
  auto out_specs = [&] {
    std::vector<PartitionSpec> s;
    for (const auto& a : outs_at) s.push_back(spec_at(a, name));
    return s;
  };
  return shard_map_flat(body, args, in_specs, paths, out_specs, {.mesh = mesh, .check_vma = false},
                        "pmap");
}

}  // namespace tsr::detail
