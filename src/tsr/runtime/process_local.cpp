// Process-local inputs of programs on meshes that span processes (executable.h).
#include <optional>

#include "tsr/core/array_impl.h"
#include "tsr/core/primitive.h"
#include "tsr/core/value_check.h"
#include "tsr/distributed.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/executable.h"

namespace tsr::detail {

const Mesh* mesh_named_by(const Primitive& prim) {
  if (const Mesh* m = prim.placement_mesh()) return m;
  for (const auto& [name, body] : prim.bodies())
    for (const Eqn& e : body->eqns)
      if (const Mesh* m = mesh_named_by(*e.prim)) return m;
  return nullptr;
}

const Mesh* mesh_named_by(const Program& p) {
  for (const Eqn& e : p.eqns)
    if (const Mesh* m = mesh_named_by(*e.prim)) return m;
  return nullptr;
}

bool place_process_local(std::vector<Array>& in, const Mesh* named) {
  auto& rt = Runtime::get();
  if (rt.process_count() == 1) return false;
  std::optional<Mesh> found;
  for (const auto& x : in)
    if (x.valid() && !x.type().sharding.mesh().empty()) {
      found = x.impl()->sharding().concrete_mesh();
      break;
    }
  if (!found && named) found = *named;
  if (!found) {
    // The context mesh, with the axis types of the abstract context a transform sets
    // (the layout's mesh then has the types the rules see).
    found = get_mesh();
    const AbstractMesh am = get_abstract_mesh();
    if (!found->empty() && !am.empty() && !(found->abstract_mesh() == am) &&
        am.manual_axes().empty() && am.axis_sizes() == found->abstract_mesh().axis_sizes())
      found = Mesh(found->devices(), am.axis_sizes(), am.axis_names(), am.axis_types());
  }
  if (found->empty()) return false;
  const Mesh* mesh = &*found;
  bool spans = false;
  for (const auto& d : mesh->devices()) spans = spans || !rt.is_local(detail::slot(d));
  if (!spans) return false;
  bool moved = false;
  for (auto& x : in) {
    // Process-local: on this process's default device, where a value made without a
    // placement lives (JAX's uncommitted arrays). One put on a chosen device is global.
    if (!x.valid() || x.impl()->var) continue;
    const Mesh& on = *x.impl()->sharding().concrete_mesh();
    if (on == *mesh || on.size() != 1 || !(on.devices()[0] == local_devices()[0])) continue;
    // Keeps its type (a mesh-less value, which rules place freely, as a shard_map's
    // in_specs do); only its layout becomes the mesh's, alike on every process.
    SkipSameValueCheck same;  // the library places it: unchecked, as JAX's jit arguments
    Array r = device_put(x, NamedSharding(*mesh, P()));
    auto impl = std::make_shared<ArrayImpl>();
    impl->meta = std::make_shared<const ArrayMeta>(ArrayMeta{x.type(), r.impl()->sharding()});
    impl->buffers = r.impl()->buffers;
    x = Array(impl);
    moved = true;
  }
  return moved;
}

}  // namespace tsr::detail
