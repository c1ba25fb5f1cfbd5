// Global arrays from per-process pieces (JAX's make_array_from_process_local_data and
// make_array_from_single_device_arrays): no communication, each process supplies the
// blocks of its own devices.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tsr/array.h"
#include "tsr/core/array_impl.h"
#include "tsr/distributed.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/runtime/accelerator.h"

namespace tsr {
namespace {

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (size_t d = 0; d < s.size(); ++d) out += (d ? ", " : "") + std::to_string(s[d]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// Number of blocks the sharding cuts dimension d into.
int64_t blocks_along(const NamedSharding& s, size_t d) {
  const auto& entries = s.spec().entries();
  if (d >= entries.size()) return 1;
  int64_t n = 1;
  for (const auto& a : entries[d].axes()) n *= s.mesh().axis_size(a);
  return n;
}

// Per process: which blocks along dimension d its devices hold (sorted).
std::vector<std::set<int64_t>> blocks_by_process(const NamedSharding& s, size_t d, int rank) {
  const Mesh& m = *s.concrete_mesh();
  // A probe shape whose dimension d has one element per block finds each block's index.
  Shape probe(static_cast<size_t>(rank), 1);
  for (int k = 0; k < rank; ++k)
    probe[static_cast<size_t>(k)] = blocks_along(s, static_cast<size_t>(k));
  std::vector<std::set<int64_t>> out(static_cast<size_t>(process_count()));
  for (int i = 0; i < m.size(); ++i)
    out[static_cast<size_t>(m.devices()[static_cast<size_t>(i)].process_index())].insert(
        s.index_of(i, probe)[d].start);
  return out;
}

}  // namespace

Array make_array_from_process_local_data(const NamedSharding& sharding, const Array& local_data,
                                         const std::optional<Shape>& global_shape) {
  constexpr const char* api = "make_array_from_process_local_data";
  detail::check_concrete(local_data, api);
  const Shape& local = local_data.shape();
  const int rank = local_data.ndim();
  if (process_count() == 1) {
    if (global_shape && *global_shape != local)
      throw ValueError(std::string("[") + api +
                       "] When calling `make_array_from_process_local_data` on a single process, "
                       "global_shape should be None or equal to local_data.shape. Got "
                       "global_shape=" +
                       shape_text(*global_shape) + " and local_data.shape=" + shape_text(local) +
                       ".");
    return device_put(local_data, sharding);
  }
  if (global_shape && static_cast<int>(global_shape->size()) != rank)
    throw ValueError(std::string("[") + api + "] global_shape has the wrong rank. Got " +
                     shape_text(*global_shape) + " for local data of shape " + shape_text(local) +
                     "; expected " + std::to_string(rank) + " dimensions.");
  NamedSharding s = sharding.normalized(rank);
  const int me = process_index();
  Shape global(static_cast<size_t>(rank));
  std::vector<std::vector<int64_t>> mine(static_cast<size_t>(rank));  // my blocks, sorted
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    auto by = blocks_by_process(s, d, rank);
    const int64_t n = blocks_along(s, d);
    const auto& here = by[static_cast<size_t>(me)];
    mine[d].assign(here.begin(), here.end());
    if (global_shape) {
      global[d] = (*global_shape)[d];
      continue;
    }
    // Uniform: every process holds as many blocks, and the distinct sets tile the dim.
    std::set<std::set<int64_t>> distinct;
    bool uniform = true;
    for (const auto& b : by) {
      if (b.empty()) continue;
      distinct.insert(b);
      uniform = uniform && b.size() == here.size();
    }
    if (!uniform || static_cast<int64_t>(distinct.size() * here.size()) != n) {
      Shape partial(global.begin(), global.begin() + static_cast<std::ptrdiff_t>(d));
      throw ValueError(std::string("[") + api +
                       "] Unable to compute global_shape due to non-uniform sharding. Specify "
                       "global shape directly. Partially computed global_shape=" +
                       shape_text(partial) + ".");
    }
    global[d] = local[d] * static_cast<int64_t>(distinct.size());
  }
  // Each dimension is either the whole global extent (indexed globally) or exactly the
  // blocks this process addresses (their data packed in order of their offsets).
  Shape block = s.shard_shape(global);
  std::vector<bool> packed(static_cast<size_t>(rank));
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    const int64_t addressed = block[d] * static_cast<int64_t>(mine[d].size());
    if (local[d] == global[d]) continue;
    if (local[d] != addressed)
      throw ValueError(std::string("[") + api +
                       "] Invalid host data, each dimension should match either global or "
                       "process shape. In dimension " +
                       std::to_string(d) +
                       ", the process data "
                       "has " +
                       std::to_string(local[d]) + " elements. Process addresses " +
                       std::to_string(addressed) +
                       " elements and global_shape=" + shape_text(global) + ".");
    packed[d] = true;
  }
  return make_array_from_callback(global, local_data.dtype(), s, [&](const ShardIndex& idx) {
    Shape start(static_cast<size_t>(rank)), stop(static_cast<size_t>(rank));
    for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
      start[d] = idx[d].start;
      stop[d] = idx[d].stop;
      if (!packed[d]) continue;
      const int64_t blk = idx[d].start / block[d];
      const auto pos = std::lower_bound(mine[d].begin(), mine[d].end(), blk) - mine[d].begin();
      start[d] = pos * block[d];
      stop[d] = start[d] + block[d];
    }
    return slice(local_data, start, stop);
  });
}

Array make_array_from_single_device_arrays(const Shape& shape, const NamedSharding& sharding,
                                           const std::vector<Array>& arrays,
                                           std::optional<DType> dtype) {
  constexpr const char* api = "make_array_from_single_device_arrays";
  NamedSharding s = resolve_placement(sharding, shape, api);
  const Mesh& m = *s.concrete_mesh();
  auto& rt = detail::Runtime::get();
  std::vector<int> want;  // addressable devices of the sharding, in mesh order
  for (const auto& d : m.devices())
    if (rt.is_local(detail::slot(d))) want.push_back(detail::slot(d));
  std::map<int, const Array*> by_device;
  std::vector<int> dup;
  for (const auto& a : arrays) {
    detail::check_concrete(a, api);
    const Mesh& am = *a.impl()->sharding().concrete_mesh();
    if (am.size() != 1)
      throw ValueError(std::string("[") + api +
                       "] When making an array from single-device arrays the input arrays must "
                       "have one shard each. An argument array had " +
                       std::to_string(am.size()) + " shard(s).");
    if (!by_device.emplace(detail::slot(am.devices()[0]), &a).second)
      dup.push_back(detail::slot(am.devices()[0]));
  }
  auto ids = [](const std::vector<int>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + std::to_string(detail::device_at(v[i]).id);
    return out + "]";
  };
  if (arrays.size() != want.size())
    throw ValueError(std::string("[") + api + "] Expected " + std::to_string(want.size()) +
                     " per-device arrays (this is how many devices are addressable by the "
                     "sharding), but got " +
                     std::to_string(arrays.size()));
  if (!dup.empty())
    throw ValueError(std::string("[") + api +
                     "] When making an array from single-device arrays, the input arrays must be "
                     "from distinct devices, but got device IDs " +
                     ids(dup));
  std::vector<int> missing, extra;
  for (int id : want)
    if (!by_device.count(id)) missing.push_back(id);
  for (const auto& [id, a] : by_device)
    if (std::find(want.begin(), want.end(), id) == want.end()) extra.push_back(id);
  if (!missing.empty() || !extra.empty())
    throw ValueError(std::string("[") + api +
                     "] Addressable devices and per-device arrays devices do not match." +
                     (missing.empty() ? ""
                                      : " Sharding contains devices " + ids(missing) +
                                            " that are not present in per-device arrays.") +
                     (extra.empty() ? ""
                                    : " Per-device arrays contain devices " + ids(extra) +
                                          " that are not present in the sharding."));
  if (arrays.empty() && !dtype)
    throw ValueError(std::string("[") + api +
                     "] If the Array has no addressable shards, `dtype` must be provided via the "
                     "`dtype` argument to `" +
                     api + "`.");
  const DType dt = dtype ? *dtype : arrays[0].dtype();
  const Shape block = s.shard_shape(shape);
  std::vector<detail::BufferPtr> bufs(static_cast<size_t>(m.size()));
  for (int i = 0; i < m.size(); ++i) {
    const int id = detail::slot(m.devices()[static_cast<size_t>(i)]);
    auto it = by_device.find(id);
    if (it == by_device.end()) continue;
    const Array& a = *it->second;
    if (a.dtype() != dt)
      throw ValueError(std::string("[") + api +
                       "] Input buffers to `Array` must have matching "
                       "dtypes. Got " +
                       dtype_name(a.dtype()) + ", expected " + dtype_name(dt) +
                       " for buffer on device " + std::to_string(id));
    if (a.shape() != block)
      throw ValueError(std::string("[") + api + "] Expected shard shape " + shape_text(block) +
                       " doesn't match the single device array shape " + shape_text(a.shape()) +
                       ". Shape of Array is " + shape_text(shape) + " with sharding " + s.str());
    bufs[static_cast<size_t>(i)] = a.impl()->buffers[0];
  }
  return detail::make_array(shape, dt, s, std::move(bufs));
}

}  // namespace tsr
