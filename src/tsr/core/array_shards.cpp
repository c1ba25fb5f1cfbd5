// Array's view of its shards across processes (array.h): every device's shard, one
// addressable shard's data, and full replication.
#include "tsr/array.h"
#include "tsr/core/array_impl.h"
#include "tsr/error.h"

namespace tsr {

std::vector<Shard> Array::global_shards() const {
  detail::check_concrete(*this, "global_shards");
  const NamedSharding& s = impl_->sharding();
  const Mesh& mesh = *s.concrete_mesh();
  const Shape local = s.shard_shape(shape());
  std::vector<Shard> out;
  for (int i = 0; i < mesh.size(); ++i) {
    Shard sh;
    sh.device = mesh.devices()[static_cast<size_t>(i)];
    sh.index = s.index_of(i, shape());
    sh.replica_id = s.replica_id(i);
    if (const auto& buf = impl_->buffers[static_cast<size_t>(i)])  // null: another process's
      sh.data = std::make_shared<Array>(
          detail::make_array(local, dtype(), NamedSharding(device_mesh(sh.device), P()), {buf}));
    out.push_back(std::move(sh));
  }
  return out;
}

Array Array::addressable_data(int i) const {
  auto shards = addressable_shards();
  if (i < 0 || i >= static_cast<int>(shards.size()))
    throw IndexError("[addressable_data] index " + std::to_string(i) +
                     " is out of range. Got that index; expected 0 <= i < " +
                     std::to_string(shards.size()) +
                     " (this process's shards). Iterate addressable_shards() instead.");
  return *shards[static_cast<size_t>(i)].data;
}

bool Array::is_fully_replicated() const {
  detail::check_concrete(*this, "is_fully_replicated");
  return impl_->sharding().is_fully_replicated();
}

}  // namespace tsr
