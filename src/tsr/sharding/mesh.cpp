#include "tsr/mesh.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>

#include "tsr/error.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/runtime.h"
#include "tsr/sharding/body_mesh.h"
#include "tsr/sharding/format.h"

namespace tsr {
namespace detail {

struct AbstractMeshData {
  std::vector<int> sizes;
  std::vector<std::string> names;
  std::vector<AxisType> types;
  size_t hash = 0;
};

struct MeshData {
  AbstractMesh abstract;
  std::vector<Device> devices;
  size_t hash = 0;
};

}  // namespace detail

using detail::ints_tuple;
using detail::names_tuple;
using detail::types_tuple;

namespace {

void hash_mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }

std::shared_ptr<const detail::AbstractMeshData> make_abstract(std::vector<int> sizes,
                                                              std::vector<std::string> names,
                                                              std::vector<AxisType> types,
                                                              AxisType default_type,
                                                              const char* who) {
  if (types.empty()) types.assign(names.size(), default_type);
  // Name checks first (as JAX's None check precedes its count check).
  for (const auto& n : names)
    if (n.empty())
      throw ValueError(std::string("[") + who + "] Mesh axis names cannot be empty. Got: " +
                       names_tuple(names) + "; expected non-empty names such as \"x\".");
  if (sizes.size() != names.size())
    throw ValueError(std::string("[") + who + "] " + who +
                     " requires as many axis sizes as axis names. Got axis_sizes=" +
                     ints_tuple(sizes) + " and axis_names=" + names_tuple(names) +
                     "; expected equal lengths. Give one name per mesh axis.");
  if (types.size() != names.size())
    throw ValueError(std::string("[") + who +
                     "] Number of axis names should match the number of axis_types. Got "
                     "axis_names=" +
                     names_tuple(names) + " and axis_types=" + types_tuple(types) +
                     ". Give one AxisType per axis, or none for the default.");
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (n.empty())
      throw ValueError(std::string("[") + who + "] Mesh axis names cannot be empty. Got: " +
                       names_tuple(names) + "; expected non-empty names such as \"x\".");
    if (!seen.insert(n).second)
      throw ValueError(std::string("[") + who + "] mesh axis name '" + n +
                       "' appears twice. Got axis_names=" + names_tuple(names) +
                       "; expected distinct names. Rename one of the axes.");
  }
  for (int s : sizes)
    if (s < 1)
      throw ValueError(std::string("[") + who + "] mesh axis sizes must be positive. Got " +
                       ints_tuple(sizes) + "; expected every size >= 1.");
  int total = 1;
  for (int s : sizes)
    if (__builtin_mul_overflow(total, s, &total))
      throw ValueError(std::string("[") + who + "] the mesh's device count overflows int. Got " +
                       ints_tuple(sizes) + "; expected a product of axis sizes below 2**31.");
  auto d = std::make_shared<detail::AbstractMeshData>();
  d->sizes = std::move(sizes);
  d->names = std::move(names);
  d->types = std::move(types);
  size_t h = 17;
  for (size_t i = 0; i < d->sizes.size(); ++i) {
    hash_mix(h, std::hash<int>()(d->sizes[i]));
    hash_mix(h, std::hash<std::string>()(d->names[i]));
    hash_mix(h, static_cast<size_t>(d->types[i]));
  }
  d->hash = h;
  return d;
}

const std::shared_ptr<const detail::AbstractMeshData>& empty_abstract() {
  static const auto e = make_abstract({}, {}, {}, AxisType::Explicit, "AbstractMesh");
  return e;
}

thread_local std::optional<Mesh> t_context_mesh;
// Set by AbstractMeshScope; when unset the abstract context is the concrete one's.
thread_local std::optional<AbstractMesh> t_abstract_mesh;
// The concrete mesh of the shard_map body being traced (body_mesh.h).
thread_local std::optional<Mesh> t_body_mesh;

}  // namespace

const char* axis_type_name(AxisType t) {
  switch (t) {
    case AxisType::Auto:
      return "Auto";
    case AxisType::Explicit:
      return "Explicit";
    case AxisType::Manual:
      return "Manual";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, AxisType t) { return os << axis_type_name(t); }

// ---- AbstractMesh ----

AbstractMesh::AbstractMesh() : d_(empty_abstract()) {}

AbstractMesh::AbstractMesh(std::vector<int> axis_sizes, std::vector<std::string> axis_names,
                           std::vector<AxisType> axis_types)
    : d_(make_abstract(std::move(axis_sizes), std::move(axis_names), std::move(axis_types),
                       AxisType::Explicit, "AbstractMesh")) {}

const std::vector<int>& AbstractMesh::axis_sizes() const { return d_->sizes; }
const std::vector<std::string>& AbstractMesh::axis_names() const { return d_->names; }
const std::vector<AxisType>& AbstractMesh::axis_types() const { return d_->types; }

int AbstractMesh::size() const {
  if (empty()) return 0;
  int n = 1;
  for (int s : d_->sizes) n *= s;
  return n;
}

int AbstractMesh::axis_index(const std::string& name) const {
  for (size_t i = 0; i < d_->names.size(); ++i)
    if (d_->names[i] == name) return static_cast<int>(i);
  return -1;
}

int AbstractMesh::axis_size(const std::string& name) const {
  int i = axis_index(name);
  if (i < 0)
    throw ValueError("[mesh] axis '" + name + "' is not in the mesh. Got '" + name +
                     "'; expected one of " + names_tuple(d_->names) + ". Check the axis name.");
  return d_->sizes[i];
}

AxisType AbstractMesh::axis_type(const std::string& name) const {
  axis_size(name);
  return d_->types[axis_index(name)];
}

namespace {
std::vector<std::string> axes_of_type(const detail::AbstractMeshData& d, AxisType t) {
  std::vector<std::string> out;
  for (size_t i = 0; i < d.names.size(); ++i)
    if (d.types[i] == t) out.push_back(d.names[i]);
  return out;
}
bool all_of_type(const detail::AbstractMeshData& d, AxisType t) {
  return !d.types.empty() &&
         std::all_of(d.types.begin(), d.types.end(), [t](AxisType x) { return x == t; });
}
}  // namespace

std::vector<std::string> AbstractMesh::explicit_axes() const {
  return axes_of_type(*d_, AxisType::Explicit);
}
std::vector<std::string> AbstractMesh::auto_axes() const {
  return axes_of_type(*d_, AxisType::Auto);
}
std::vector<std::string> AbstractMesh::manual_axes() const {
  return axes_of_type(*d_, AxisType::Manual);
}
bool AbstractMesh::are_all_axes_explicit() const { return all_of_type(*d_, AxisType::Explicit); }
bool AbstractMesh::are_all_axes_auto() const { return all_of_type(*d_, AxisType::Auto); }
bool AbstractMesh::are_all_axes_manual() const { return all_of_type(*d_, AxisType::Manual); }

AbstractMesh AbstractMesh::update_axis_types(
    const std::vector<std::pair<std::string, AxisType>>& u) const {
  std::vector<AxisType> types = d_->types;
  for (const auto& [name, t] : u) {
    axis_size(name);
    types[axis_index(name)] = t;
  }
  return AbstractMesh(d_->sizes, d_->names, types);
}

AbstractMesh AbstractMesh::update(const MeshUpdate& u) const {
  if (u.devices)
    throw ValueError(
        "[AbstractMesh.update] AbstractMesh does not implement devices. Got " +
        std::to_string(u.devices->size()) +
        " devices; expected none. Call Mesh::update on a concrete mesh to change devices.");
  return AbstractMesh(u.axis_sizes.value_or(d_->sizes), u.axis_names.value_or(d_->names),
                      u.axis_types.value_or(d_->types));
}

std::string AbstractMesh::str() const {
  if (empty()) return "AbstractMesh()";
  std::string s = "AbstractMesh(";
  for (size_t i = 0; i < d_->names.size(); ++i)
    s += (i ? ", '" : "'") + d_->names[i] + "': " + std::to_string(d_->sizes[i]);
  return s + ", axis_types=" + types_tuple(d_->types) + ")";
}

bool AbstractMesh::operator==(const AbstractMesh& o) const {
  return d_ == o.d_ || (d_->hash == o.d_->hash && d_->sizes == o.d_->sizes &&
                        d_->names == o.d_->names && d_->types == o.d_->types);
}

size_t AbstractMesh::hash() const { return d_->hash; }

std::ostream& operator<<(std::ostream& os, const AbstractMesh& m) { return os << m.str(); }

// ---- Mesh ----

namespace {
const std::shared_ptr<const detail::MeshData>& empty_mesh_data() {
  static const auto e = std::make_shared<const detail::MeshData>();
  return e;
}
}  // namespace

Mesh::Mesh() : d_(empty_mesh_data()) {}

Mesh::Mesh(std::vector<Device> devices, std::vector<int> axis_sizes,
           std::vector<std::string> axis_names, std::vector<AxisType> axis_types) {
  auto d = std::make_shared<detail::MeshData>();
  int64_t prod = 1;
  for (int s : axis_sizes) prod *= s;
  // The mesh's own checks come first so their messages name the real mistake.
  AbstractMesh abs;
  if (!axis_names.empty() || !axis_sizes.empty()) {
    abs = AbstractMesh(
        axis_sizes, axis_names,
        axis_types.empty() ? std::vector<AxisType>(axis_names.size(), AxisType::Auto) : axis_types);
  }
  if (static_cast<int64_t>(devices.size()) != prod)
    throw ValueError("[Mesh] the device count does not match the mesh shape. Got " +
                     std::to_string(devices.size()) +
                     " devices for axis_sizes=" + ints_tuple(axis_sizes) + "; expected " +
                     std::to_string(prod) + ". Pass exactly prod(axis_sizes) devices.");
  std::set<int> ids;
  for (const Device& dev : devices) {
    detail::check_device(dev, "Mesh");
    if (!ids.insert(detail::slot(dev)).second)
      throw ValueError("[Mesh] a device appears twice. Got " + dev.str() +
                       " twice; expected each device at most once in a mesh.");
    if (dev.platform != devices[0].platform)
      throw ValueError("[Mesh] the devices are on different platforms. Got " + devices[0].str() +
                       " and " + dev.str() +
                       "; expected one platform per mesh (a step runs one backend's kernels). "
                       "Make one mesh per platform and move arrays between them with "
                       "device_put.");
  }
  d->abstract = abs;
  d->devices = std::move(devices);
  size_t h = abs.hash();
  for (const Device& dev : d->devices) hash_mix(h, static_cast<size_t>(detail::slot(dev)));
  d->hash = h;
  d_ = std::move(d);
}

const AbstractMesh& Mesh::abstract_mesh() const { return d_->abstract; }
const std::vector<Device>& Mesh::devices() const { return d_->devices; }

std::vector<int> Mesh::coords(int flat_index) const {
  const auto& sizes = axis_sizes();
  std::vector<int> c(sizes.size());
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    c[i] = flat_index % sizes[i];
    flat_index /= sizes[i];
  }
  return c;
}

int Mesh::index_of(const Device& d) const {
  const auto& devs = devices();
  for (size_t i = 0; i < devs.size(); ++i)
    if (devs[i] == d) return static_cast<int>(i);
  return -1;
}

Mesh Mesh::update(const MeshUpdate& u) const {
  std::vector<Device> devs = u.devices.value_or(devices());
  std::vector<int> sizes = u.axis_sizes.value_or(axis_sizes());
  std::vector<std::string> names = u.axis_names.value_or(axis_names());
  std::vector<AxisType> types = u.axis_types.value_or(axis_types());
  // Renaming to fewer or more axes without new types: the default (Auto, as Mesh).
  if (!u.axis_types && types.size() != names.size()) types.clear();
  return Mesh(std::move(devs), std::move(sizes), std::move(names), std::move(types));
}

std::string Mesh::str() const {
  if (ndim() == 0) return empty() ? "Mesh()" : "Mesh(device=" + devices()[0].str() + ")";
  std::string s = "Mesh(";
  for (int i = 0; i < ndim(); ++i)
    s += (i ? ", '" : "'") + axis_names()[i] + "': " + std::to_string(axis_sizes()[i]);
  return s + ", axis_types=" + types_tuple(axis_types()) + ")";
}

std::string Mesh::repr() const {
  return "Mesh(axis_sizes=" + ints_tuple(axis_sizes()) +
         ", axis_names=" + names_tuple(axis_names()) + ", axis_types=" + types_tuple(axis_types()) +
         ")";
}

bool Mesh::operator==(const Mesh& o) const {
  return d_ == o.d_ ||
         (d_->hash == o.d_->hash && d_->devices == o.d_->devices && d_->abstract == o.d_->abstract);
}

size_t Mesh::hash() const { return d_->hash; }

std::ostream& operator<<(std::ostream& os, const Mesh& m) { return os << m.str(); }

Mesh device_mesh(const Device& d) { return Mesh({d}, {}, {}); }

std::vector<Device> create_device_mesh(const std::vector<int>& mesh_shape,
                                       const std::vector<Device>& devs) {
  std::vector<Device> all = devs.empty() ? devices() : devs;
  int64_t prod = 1;
  for (int s : mesh_shape) {
    if (s < 1)
      throw ValueError(
          "[create_device_mesh] `mesh_shape` passed to `create_device_mesh` should "
          "be a sequence of positive ints. Got " +
          ints_tuple(mesh_shape) + ".");
    if (__builtin_mul_overflow(prod, s, &prod)) prod = INT64_MAX;  // never equals a count
  }
  if (prod != static_cast<int64_t>(all.size()))
    throw ValueError("[create_device_mesh] Number of devices " + std::to_string(all.size()) +
                     " must equal the product of mesh_shape " + ints_tuple(mesh_shape) +
                     ". Pass that many devices or change the shape.");
  // GPUs are ordered by id (as JAX); CPUs keep the given order.
  if (!all.empty() && all.back().platform == Platform::CUDA)
    std::sort(all.begin(), all.end(), [](const Device& a, const Device& b) { return a.id < b.id; });
  return all;
}

Mesh make_mesh(const std::vector<int>& axis_sizes, const std::vector<std::string>& axis_names,
               const std::vector<AxisType>& axis_types, const std::vector<Device>& devs) {
  std::vector<Device> all = devs.empty() ? devices() : devs;
  int64_t prod = 1;
  for (int s : axis_sizes) {
    if (s < 1)
      throw ValueError(
          "[make_mesh] `axis_sizes` passed to `make_mesh` should be a sequence of "
          "positive ints. Got " +
          ints_tuple(axis_sizes) + ".");
    if (__builtin_mul_overflow(prod, s, &prod)) prod = INT64_MAX;  // more than any count
  }
  if (prod > static_cast<int64_t>(all.size()))
    throw ValueError("[make_mesh] Number of devices " + std::to_string(all.size()) +
                     " must be >= the product of mesh_shape " + ints_tuple(axis_sizes) +
                     ". Start Tessera with more devices (tsr::init({.num_cpu_devices = " +
                     std::to_string(prod) + "}) or TSR_NUM_CPU_DEVICES) or use a smaller mesh.");
  all.resize(static_cast<size_t>(prod));
  std::vector<AxisType> types = axis_types.empty()
                                    ? std::vector<AxisType>(axis_names.size(), AxisType::Explicit)
                                    : axis_types;
  return Mesh(create_device_mesh(axis_sizes, all), axis_sizes, axis_names, types);
}

void set_mesh(const std::optional<Mesh>& mesh) {
  if (mesh && !mesh->abstract_mesh().manual_axes().empty())
    throw ValueError("[set_mesh] mesh " + mesh->str() +
                     " contains manual axes which is not allowed when using `set_mesh`. Please "
                     "use `shard_map` to enter into `Manual` mode instead.");
  t_context_mesh = mesh && !mesh->empty() ? mesh : std::nullopt;
  t_abstract_mesh.reset();
}

Mesh get_mesh() { return t_context_mesh ? *t_context_mesh : Mesh(); }

AbstractMesh get_abstract_mesh() {
  if (t_abstract_mesh) return *t_abstract_mesh;
  return t_context_mesh ? t_context_mesh->abstract_mesh() : AbstractMesh();
}

MeshScope::MeshScope(const Mesh& mesh)
    : previous_(t_context_mesh), previous_abstract_(t_abstract_mesh) {
  set_mesh(mesh);
}

MeshScope::~MeshScope() {
  t_context_mesh = previous_;
  t_abstract_mesh = previous_abstract_;
}

AbstractMeshScope::AbstractMeshScope(const AbstractMesh& mesh) : previous_(t_abstract_mesh) {
  AbstractMesh prev = get_abstract_mesh();
  if (!prev.empty() && !mesh.empty() && prev.size() != mesh.size())
    throw ValueError(
        "[use_abstract_mesh] use_abstract_mesh cannot change the size of the mesh. "
        "Got new mesh: " +
        mesh.str() + " with size=" + std::to_string(mesh.size()) + " and prev mesh: " + prev.str() +
        " with size=" + std::to_string(prev.size()) +
        ". Keep the product of the axis sizes (rename, reshape or retype only).");
  t_abstract_mesh = mesh;
}

AbstractMeshScope::~AbstractMeshScope() { t_abstract_mesh = previous_; }

namespace detail {

BodyMeshScope::BodyMeshScope(const Mesh& mesh) : previous_(t_body_mesh) { t_body_mesh = mesh; }

BodyMeshScope::~BodyMeshScope() { t_body_mesh = previous_; }

Mesh body_mesh() { return t_body_mesh ? *t_body_mesh : Mesh(); }

}  // namespace detail

}  // namespace tsr
