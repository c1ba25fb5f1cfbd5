#pragma once
// The concrete mesh of the shard_map body being traced on this thread. A body's
// values carry only the abstract (Manual) mesh; visualize names devices with this.
#include "tsr/mesh.h"

namespace tsr::detail {

/** Makes `mesh` the body mesh while a shard_map body is traced; restores on exit. */
class BodyMeshScope {
 public:
  /** Sets the body mesh until this object dies. */
  explicit BodyMeshScope(const Mesh& mesh);
  ~BodyMeshScope();
  BodyMeshScope(const BodyMeshScope&) = delete;
  BodyMeshScope& operator=(const BodyMeshScope&) = delete;

 private:
  std::optional<Mesh> previous_;
};

/** The innermost shard_map body's concrete mesh; the empty mesh outside any body. */
Mesh body_mesh();

}  // namespace tsr::detail
