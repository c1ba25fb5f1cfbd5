#pragma once
/** Device meshes: an n-d array of devices with named axes, each Explicit, Auto or
 *  Manual (spec/sharding.md §1–§5). */
#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tsr/device.h"

namespace tsr {

/** How the library treats a mesh axis: in types (Explicit), chosen by propagation
 *  (Auto) or per-device inside shard_map (Manual). */
enum class AxisType : uint8_t { Auto, Explicit, Manual };
/** "Auto", "Explicit", "Manual". */
const char* axis_type_name(AxisType t);
/** Prints axis_type_name. */
std::ostream& operator<<(std::ostream& os, AxisType t);

/** Fields changed by AbstractMesh::update / Mesh::update (JAX's keyword arguments);
 *  an unset field keeps the current value. Spelled m.update({.axis_names =
 * std::vector<std::string>{"a", "b"}}). */
struct MeshUpdate {
  std::optional<std::vector<int>> axis_sizes = {}; /**< sizes (a Mesh reshapes its devices) */
  std::optional<std::vector<std::string>> axis_names = {}; /**< names, one per axis */
  std::optional<std::vector<AxisType>> axis_types = {};    /**< types, one per axis */
  std::optional<std::vector<Device>> devices = {};         /**< Mesh only: devices, row-major */
};

namespace detail {
struct AbstractMeshData;
struct MeshData;
}  // namespace detail

/** A mesh without devices: axis sizes, names and types. Types carry these. */
class AbstractMesh {
 public:
  /** The empty mesh (no axes, size 0). */
  AbstractMesh();
  /** Builds a mesh; axis_types defaults to Explicit for every axis. */
  AbstractMesh(std::vector<int> axis_sizes, std::vector<std::string> axis_names,
               std::vector<AxisType> axis_types = {});
  /** Axis sizes, in mesh order. */
  const std::vector<int>& axis_sizes() const;
  /** Axis names, in mesh order. */
  const std::vector<std::string>& axis_names() const;
  /** Axis types, in mesh order. */
  const std::vector<AxisType>& axis_types() const;
  /** Number of axes. */
  int ndim() const { return static_cast<int>(axis_sizes().size()); }
  /** Product of axis sizes; 0 for the empty mesh. */
  int size() const;
  /** True for the mesh with no axes. */
  bool empty() const { return axis_sizes().empty(); }
  /** Index of an axis by name, or -1. */
  int axis_index(const std::string& name) const;
  /** Size of a named axis; ValueError if absent. */
  int axis_size(const std::string& name) const;
  /** Type of a named axis; ValueError if absent. */
  AxisType axis_type(const std::string& name) const;
  /** Names of the Explicit axes, in mesh order. */
  std::vector<std::string> explicit_axes() const;
  /** Names of the Auto axes, in mesh order. */
  std::vector<std::string> auto_axes() const;
  /** Names of the Manual axes, in mesh order. */
  std::vector<std::string> manual_axes() const;
  /** True if the mesh is non-empty and every axis is Explicit. */
  bool are_all_axes_explicit() const;
  /** True if the mesh is non-empty and every axis is Auto. */
  bool are_all_axes_auto() const;
  /** True if the mesh is non-empty and every axis is Manual. */
  bool are_all_axes_manual() const;
  /** Copy with some axis types changed (ValueError for a name not in the mesh). */
  AbstractMesh update_axis_types(const std::vector<std::pair<std::string, AxisType>>& u) const;
  /** Copy with other sizes, names or types (JAX's AbstractMesh.update); validated as
   *  the constructor. Usable inside jit, e.g. with AbstractMeshScope to rename axes. */
  AbstractMesh update(const MeshUpdate& u) const;
  /** "AbstractMesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit))". */
  std::string str() const;
  /** Structural equality. */
  bool operator==(const AbstractMesh& o) const;
  /** Hash consistent with ==. */
  size_t hash() const;

 private:
  std::shared_ptr<const detail::AbstractMeshData> d_;
};

/** A mesh of concrete devices. Mesh(...) defaults to Auto axes (as JAX's Mesh);
 *  make_mesh defaults to Explicit. */
class Mesh {
 public:
  /** The empty mesh. */
  Mesh();
  /** Devices in row-major order of `axis_sizes`; names and types as AbstractMesh.
   *  Rejects duplicate names and duplicate devices (JAX does not; we do). */
  Mesh(std::vector<Device> devices, std::vector<int> axis_sizes,
       std::vector<std::string> axis_names, std::vector<AxisType> axis_types = {});
  /** The mesh without its devices. */
  const AbstractMesh& abstract_mesh() const;
  /** Devices, flattened row-major. */
  const std::vector<Device>& devices() const;
  /** Axis sizes. */
  const std::vector<int>& axis_sizes() const { return abstract_mesh().axis_sizes(); }
  /** Axis names. */
  const std::vector<std::string>& axis_names() const { return abstract_mesh().axis_names(); }
  /** Axis types. */
  const std::vector<AxisType>& axis_types() const { return abstract_mesh().axis_types(); }
  /** Number of axes. */
  int ndim() const { return abstract_mesh().ndim(); }
  /** Number of devices (0 for the empty mesh; 1 for a zero-axis single-device mesh). */
  int size() const { return static_cast<int>(devices().size()); }
  /** True when the mesh has no devices. */
  bool empty() const { return devices().empty(); }
  /** Mesh coordinates of the device at flat position i. */
  std::vector<int> coords(int flat_index) const;
  /** Flat position of a device in this mesh, or -1. */
  int index_of(const Device& d) const;
  /** Size of a named axis. */
  int axis_size(const std::string& name) const { return abstract_mesh().axis_size(name); }
  /** A new mesh (JAX's Mesh.update): other devices, or the same devices under other
   *  names, types or sizes (prod(axis_sizes) must equal the device count). */
  Mesh update(const MeshUpdate& u) const;
  /** "Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit))". */
  std::string str() const;
  /** "Mesh(axis_sizes=(2, 2), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))". */
  std::string repr() const;
  /** This process's devices of the mesh, in mesh order. */
  std::vector<Device> local_devices() const;
  /** True when the mesh has devices of more than one process. */
  bool is_multi_process() const;
  /** The smallest block of the mesh (a range per axis) holding this process's
   *  devices, as a mesh of the same names and types; ValueError (JAX's text) when that
   *  block holds another process's device. The whole mesh in one process. */
  Mesh local_mesh() const;
  /** Same devices, shape, names and types. */
  bool operator==(const Mesh& o) const;
  /** Hash consistent with ==. */
  size_t hash() const;

 private:
  std::shared_ptr<const detail::MeshData> d_;
};

/** Prints Mesh::str(). */
std::ostream& operator<<(std::ostream& os, const Mesh& m);
/** Prints AbstractMesh::str(). */
std::ostream& operator<<(std::ostream& os, const AbstractMesh& m);

/** A one-device mesh with no axes: where single-device arrays live. */
Mesh device_mesh(const Device& d);

/** Builds a mesh over the first prod(axis_sizes) devices (all by default), ordered by
 *  create_device_mesh; axis types default to Explicit. */
Mesh make_mesh(const std::vector<int>& axis_sizes, const std::vector<std::string>& axis_names,
               const std::vector<AxisType>& axis_types = {},
               const std::vector<Device>& devices = {});
/** Arranges devices (all by default) for mesh_shape, row-major; the product must equal
 *  the device count. CPU order is the given order; GPUs are sorted by id. */
std::vector<Device> create_device_mesh(const std::vector<int>& mesh_shape,
                                       const std::vector<Device>& devices = {});

/** jax mesh_utils.create_hybrid_device_mesh: granules (processes: CPU devices have
 *  no slice index, so process_is_granule must be true) of create_device_mesh(
 *  mesh_shape) each, tiled on a dcn_mesh_shape grid, granule index major. Dim i of
 *  the result is dcn_mesh_shape[i] * mesh_shape[i]; ValueError (JAX's texts) when the
 *  granule count is not prod(dcn_mesh_shape) or process_is_granule is false. */
std::vector<Device> create_hybrid_device_mesh(const std::vector<int>& mesh_shape,
                                              const std::vector<int>& dcn_mesh_shape,
                                              const std::vector<Device>& devices = {},
                                              bool process_is_granule = false);

/** Sets the thread's context mesh (std::nullopt clears it). */
void set_mesh(const std::optional<Mesh>& mesh);
/** The context mesh; the empty mesh when none is set. */
Mesh get_mesh();
/** The abstract context mesh (empty when none). */
AbstractMesh get_abstract_mesh();

/** Scoped context mesh, like `with jax.set_mesh(mesh):`; restores on destruction.
 *  Sets both the concrete and the abstract context mesh. */
class MeshScope {
 public:
  /** Makes `mesh` the context mesh until this object dies. */
  explicit MeshScope(const Mesh& mesh);
  ~MeshScope();
  MeshScope(const MeshScope&) = delete;
  MeshScope& operator=(const MeshScope&) = delete;

 private:
  std::optional<Mesh> previous_;
  std::optional<AbstractMesh> previous_abstract_;
};

/** Scoped abstract context mesh, like `with jax.sharding.use_abstract_mesh(m):`:
 *  get_abstract_mesh() (what specs resolve against and rules check) becomes `mesh`;
 *  the concrete context mesh is unchanged. Usable inside jit. It may rename axes or
 *  change their sizes and types, not the total size (ValueError), unless the
 *  previous or the new mesh is empty. */
class AbstractMeshScope {
 public:
  /** Makes `mesh` the abstract context mesh until this object dies. */
  explicit AbstractMeshScope(const AbstractMesh& mesh);
  ~AbstractMeshScope();
  AbstractMeshScope(const AbstractMeshScope&) = delete;
  AbstractMeshScope& operator=(const AbstractMeshScope&) = delete;

 private:
  std::optional<AbstractMesh> previous_;
};
/** JAX's spelling: `use_abstract_mesh scope(m);`. */
using use_abstract_mesh = AbstractMeshScope;

}  // namespace tsr

/** Hashes a Mesh (unordered containers keyed by mesh). */
template <>
struct std::hash<tsr::Mesh> {
  /** Mesh::hash(). */
  size_t operator()(const tsr::Mesh& m) const { return m.hash(); }
};
/** Hashes an AbstractMesh (unordered containers keyed by abstract mesh). */
template <>
struct std::hash<tsr::AbstractMesh> {
  /** AbstractMesh::hash(). */
  size_t operator()(const tsr::AbstractMesh& m) const { return m.hash(); }
};
