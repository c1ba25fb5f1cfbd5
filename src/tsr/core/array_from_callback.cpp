// make_array_from_callback: an array assembled from per-device blocks that a callback
// supplies, so that a loader (checkpoint restore) never holds the whole value at once.
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tsr/array.h"
#include "tsr/core/array_impl.h"
#include "tsr/error.h"
#include "tsr/runtime/accelerator.h"

namespace tsr {
namespace {

constexpr const char* kApi = "make_array_from_callback";

// Sum-unreduced layouts hold the value at coordinate 0 of each unreduced axis and
// zeros elsewhere (spec §9), as device_put lays them out.
bool holds_zeros(const NamedSharding& s, int i) {
  if (s.spec().unreduced().empty() || s.spec().unreduced_kind() != UnreducedKind::Sum) return false;
  std::vector<int> c = s.concrete_mesh()->coords(i);
  for (const auto& a : s.spec().unreduced())
    if (c[static_cast<size_t>(s.mesh().axis_index(a))] != 0) return true;
  return false;
}

std::vector<std::pair<int64_t, int64_t>> key_of(const ShardIndex& idx) {
  std::vector<std::pair<int64_t, int64_t>> k;
  k.reserve(idx.size());
  for (const auto& s : idx) k.emplace_back(s.start, s.stop);
  return k;
}

std::string type_str(DType t, const Shape& s) {
  std::string out = std::string(dtype_short_name(t)) + "[";
  for (size_t d = 0; d < s.size(); ++d) out += (d ? "," : "") + std::to_string(s[d]);
  return out + "]";
}

// The callback's block for `idx`, checked against the shape and dtype it must have.
Array checked_block(const std::function<Array(const ShardIndex&)>& callback, const ShardIndex& idx,
                    const Shape& local, DType dtype) {
  Array b = callback(idx);
  if (!b.valid())
    throw ValueError(std::string("[") + kApi + "] the callback returned an empty Array for index " +
                     index_str(idx) + ". Got a default-constructed Array; expected the block of " +
                     "shape " + shape_str(local) + ". Return the data at that index.");
  detail::check_concrete(b, kApi);
  if (b.shape() != local || b.dtype() != dtype)
    throw ValueError(std::string("[") + kApi + "] the callback's block for index " +
                     index_str(idx) + " has the wrong type. Got " + type_str(b.dtype(), b.shape()) +
                     "; expected " + type_str(dtype, local) +
                     " (the sharding's block shape and the array's dtype). Return exactly the "
                     "data at that index, converted to the dtype.");
  return b;
}

}  // namespace

Array make_array_from_callback(const Shape& shape, DType dtype, const Placement& sharding,
                               const std::function<Array(const ShardIndex& index)>& callback) {
  check_dtype(dtype, kApi);
  check_shape(shape, kApi, itemsize(dtype));
  if (!callback)
    throw ValueError(std::string("[") + kApi +
                     "] the callback is empty. Got an empty std::function; expected a callable "
                     "that returns the block at an index.");
  NamedSharding s = resolve_placement(sharding, shape, kApi);
  const Mesh& mesh = *s.concrete_mesh();
  Shape local = s.shard_shape(shape);
  size_t local_bytes = static_cast<size_t>(numel(local)) * static_cast<size_t>(itemsize(dtype));
  auto& rt = detail::Runtime::get();
  std::vector<detail::BufferPtr> bufs(static_cast<size_t>(mesh.size()));
  std::map<std::vector<std::pair<int64_t, int64_t>>, Array> blocks;  // one call per index
  for (int i = 0; i < mesh.size(); ++i) {
    const Device& dev = mesh.devices()[static_cast<size_t>(i)];
    if (!rt.is_local(detail::slot(dev))) continue;  // each process makes its own devices' blocks
    if (holds_zeros(s, i)) {
      bufs[static_cast<size_t>(i)] = rt.alloc(detail::slot(dev), local_bytes);
      rt.memory(detail::slot(dev)).fill(bufs[static_cast<size_t>(i)]->ptr, 0, local_bytes);
      continue;
    }
    ShardIndex idx = s.index_of(i, shape);
    auto [it, fresh] = blocks.try_emplace(key_of(idx));
    if (fresh) it->second = checked_block(callback, idx, local, dtype);
    const Array& b = it->second;
    const detail::ArrayImpl& impl = *b.impl();
    const auto& bm = impl.sharding().concrete_mesh();
    bool here = bm && bm->size() == 1 && bm->devices()[0] == dev && impl.buffers.size() == 1;
    // A block on its device is shared (arrays are immutable); others are copied there.
    bufs[static_cast<size_t>(i)] = here ? impl.buffers[0] : device_put(b, dev).impl()->buffers[0];
  }
  Array a = detail::make_array(shape, dtype, s, std::move(bufs));
  if (auto g = detail::given_sharding(sharding, s)) return detail::with_given_sharding(a, *g);
  return a;
}

}  // namespace tsr
