#include "tsr/core/primitive.h"

#include <set>

#include <algorithm>
#include <mutex>

#include "tsr/backends/kernel.h"
#include "tsr/error.h"
#include "tsr/prims/common.h"
#include "tsr/prims/pcast.h"

namespace tsr::detail {

Lowering Primitive::partition(const std::vector<ArrayType>& in,
                              const std::vector<ArrayType>& out) const {
  Lowering l;
  std::vector<PartitionEntry> oe = out.empty() ? std::vector<PartitionEntry>{} : entries_of(out[0]);
  for (const auto& t : in) {
    std::vector<PartitionEntry> e(static_cast<size_t>(t.ndim()));
    if (!out.empty() && t.ndim() == out[0].ndim())
      for (int d = 0; d < t.ndim(); ++d)
        if (t.shape[d] == out[0].shape[d]) e[d] = oe[d];
    l.in.push_back(with_sets_of(e, t.sharding.spec()));
  }
  for (const auto& t : out) l.out.push_back(t.sharding.spec());
  return l;
}

std::vector<Array> Primitive::jvp(const std::vector<Array>&, const std::vector<Array>&,
                                  std::vector<Array>&) const {
  throw NotImplementedError(std::string("[jvp] primitive '") + name() +
                            "' has no differentiation rule. Got a jvp (or grad) through '" +
                            name() +
                            "'; expected a differentiable primitive. Wrap its inputs in "
                            "stop_gradient if its derivative is not needed.");
}
std::vector<Array> Primitive::transpose(const std::vector<Array>&,
                                        const std::vector<LinearIn>&) const {
  throw NotImplementedError(std::string("[transpose] primitive '") + name() +
                            "' is not linear: it has no transpose rule. Got a transpose through '" +
                            name() + "'; expected a linear primitive.");
}
Batched Primitive::batch(const std::vector<Array>&, const std::vector<int>&) const {
  throw NotImplementedError(std::string("[vmap] primitive '") + name() +
                            "' has no batching rule. Got a vmap over '" + name() +
                            "'; expected a primitive with a batch rule. Loop over the batch "
                            "instead (or report it: every primitive should have one).");
}

bool Primitive::equals(const Primitive& o) const {
  if (this == &o) return true;
  if (std::string_view(name()) != o.name() || params() != o.params()) return false;
  // params() print a placement's spec, not its devices: a ones on 4 devices is not the
  // ones on one device (the eager cache would hand back the wrong placement).
  const Mesh *a = placement_mesh(), *b = o.placement_mesh();
  return (!a && !b) || (a && b && *a == *b);
}

size_t Primitive::hash() const {
  return std::hash<std::string_view>()(name()) * 31 + std::hash<std::string>()(params());
}

namespace {
std::mutex& registry_mu() {
  static std::mutex mu;
  return mu;
}
std::vector<std::string>& registry() {
  static std::vector<std::string> r;
  return r;
}
}  // namespace

bool register_primitive(const char* name) {
  std::lock_guard<std::mutex> lock(registry_mu());
  auto& r = registry();
  if (std::find(r.begin(), r.end(), name) == r.end()) r.push_back(name);
  return true;
}

const std::vector<std::string>& registered_primitives() { return registry(); }

namespace {
std::vector<std::tuple<std::string, AdKind, std::string>>& ad_registry() {
  static std::vector<std::tuple<std::string, AdKind, std::string>> r;
  return r;
}
}  // namespace

namespace {
std::set<std::string>& complex_registry() {
  static std::set<std::string> r;
  return r;
}
}  // namespace

bool declare_complex(const char* name) {
  std::lock_guard<std::mutex> lock(registry_mu());
  complex_registry().insert(name);
  return true;
}

bool complex_declared(const char* name) {
  std::lock_guard<std::mutex> lock(registry_mu());
  return complex_registry().count(name) > 0;
}

bool declare_ad(const char* name, AdKind kind, const char* why) {
  std::lock_guard<std::mutex> lock(registry_mu());
  ad_registry().emplace_back(name, kind, why);
  return true;
}

std::vector<std::tuple<std::string, AdKind, std::string>> ad_declarations() {
  std::lock_guard<std::mutex> lock(registry_mu());
  return ad_registry();
}

namespace {

bool has_explicit(const AbstractMesh& m) { return !m.explicit_axes().empty(); }

std::string types_list(const std::vector<ArrayType>& in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : "") + in[i].str();
  return s;
}

// Primitives without kernels (jit, shard_map, control flow) carry complex values
// through; one with a kernel must have declared that its kernel takes them.
void check_complex(const Primitive& prim, const std::vector<ArrayType>& types) {
  for (const auto& t : types) {
    if (!is_complex(t.dtype)) continue;
    if (!has_kernel(prim.name()) || complex_declared(prim.name())) return;
    throw NotImplementedError(std::string("[") + prim.name() + "] " + dtype_name(t.dtype) +
                              " is not supported by " + prim.name() + " yet. Got " + t.str() +
                              "; expected a real dtype. Compute on the real and imaginary parts "
                              "(tsr::real, tsr::imag) and combine them with tsr::complex.");
  }
}

}  // namespace

std::vector<ArrayType> infer_types(const Primitive& prim, const std::vector<ArrayType>& in) {
  AbstractMesh ctx = get_abstract_mesh();
  const char* name = prim.name();
  // Spec §11 step 1: the context mesh must match each input's mesh.
  for (const auto& t : in) {
    const AbstractMesh& m = t.sharding.mesh();
    if (!prim.checks_context_mesh()) break;
    if (m.empty() || ctx.empty() || (m.are_all_axes_auto() && ctx.are_all_axes_auto())) continue;
    if (!(m == ctx))
      throw ValueError(std::string("[") + name + "] For primitive " + name + ", context mesh " +
                       ctx.str() + " should match the aval mesh " + m.str() + " for shape " +
                       t.str() +
                       ". Enter the array's mesh with MeshScope, or reshard the array onto the "
                       "context mesh (reshard(x, P(...)) resolves the spec there).");
  }
  // Step 3: all non-empty input meshes must be equal (two all-Auto meshes pass).
  const AbstractMesh* first = nullptr;
  for (const auto& t : in) {
    const AbstractMesh& m = t.sharding.mesh();
    if (m.empty()) continue;
    if (!first) {
      first = &m;
    } else if (!(m == *first) && (has_explicit(m) || has_explicit(*first))) {
      throw ShardingTypeError(
          std::string("[") + name + "] Mesh for all inputs should be equal. Got one mesh: " +
          first->str() + " and another mesh: " + m.str() +
          ". Reshard the inputs onto one mesh first (reshard(x, NamedSharding(mesh, spec))).");
    }
  }
  // Manual-spmd §3.3: ordinary primitives need equal vma on every operand (bind
  // inserts the pvary that makes them so) and give it to their outputs.
  const std::set<std::string>* vma = nullptr;
  if (!prim.custom_vma())
    for (const auto& t : in) {
      if (!vma) {
        vma = &t.vma;
      } else if (t.vma != *vma) {
        std::string got;
        for (const auto& u : in) {
          std::string s;
          for (const auto& a : u.vma) s += (s.empty() ? "'" : ", '") + a + "'";
          got += (got.empty() ? "" : ", ") + std::string("{") + s + "}";
        }
        throw ValueError(std::string("[") + name + "] Primitive " + name +
                         " requires varying manual axes to match, but got [" + got +
                         "]. Got operands that vary over different manual axes; expected equal "
                         "sets. Apply tsr::pvary to the invariant operand (the ops do it for "
                         "you), or pass check_vma=false to shard_map.");
      }
    }
  try {
    std::vector<ArrayType> out = prim.infer(in);
    // After the rule, so its own refusals (JAX's texts) come first.
    check_complex(prim, in);
    check_complex(prim, out);
    if (vma)
      for (auto& t : out) t.vma = *vma;
    // Operands unreduced / reduced over manual axes (pcast): sharding §9's rules.
    if (!prim.custom_vma())
      for (const auto& t : in)
        if (!t.munreduced.empty() || !t.mreduced.empty()) {
          prim::manual_unreduced_rule(prim, in, out);
          break;
        }
    // Every result type passes the one shape check, so no rule can hand the
    // lowering a negative size or an element count / byte size past int64.
    for (const auto& t : out) {
      check_dtype(t.dtype, name);
      check_shape(t.shape, name, itemsize(t.dtype));
    }
    return out;
  } catch (const IllegalResult& e) {
    // Step 7: a proposed spec that uses an axis twice.
    throw ShardingTypeError(std::string("[") + name + "] " + name +
                            " operation with inputs: " + types_list(in) +
                            " produces an illegally sharded result: " + e.rendered() +
                            ". Reshard an input, or pass out_sharding where the op takes one.");
  }
}

}  // namespace tsr::detail
