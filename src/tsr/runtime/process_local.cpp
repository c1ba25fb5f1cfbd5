// Process-local inputs of programs on meshes that span processes (executable.h).
#include <optional>

#include "tsr/core/array_impl.h"
#include "tsr/runtime/executable.h"

namespace tsr::detail {

bool place_process_local(std::vector<Array>& in) {
  auto& rt = Runtime::get();
  if (rt.process_count() == 1) return false;
  std::optional<Mesh> found;
  for (const auto& x : in)
    if (x.valid() && !x.type().sharding.mesh().empty()) {
      found = x.impl()->sharding().concrete_mesh();
      break;
    }
  if (!found) found = get_mesh();
  if (found->empty()) return false;
  const Mesh* mesh = &*found;
  bool spans = false;
  for (const auto& d : mesh->devices()) spans = spans || !rt.is_local(d.id);
  if (!spans) return false;
  bool moved = false;
  for (auto& x : in) {
    if (!x.valid() || x.impl()->var || *x.impl()->sharding().concrete_mesh() == *mesh ||
        !x.is_fully_addressable())
      continue;
    x = device_put(x, NamedSharding(*mesh, P()));
    moved = true;
  }
  return moved;
}

}  // namespace tsr::detail
