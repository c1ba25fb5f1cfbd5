// shard_map's entry: the checks of manual-spmd §2.2-2.3 (mesh, axis names, specs,
// divisibility), the body traced at block types on the mesh with the manual axes
// typed Manual (inputs vary over their spec's axes), the out_specs promise of §3.7
// (with the implicit pvary of outputs), and the bind.
#include <algorithm>
#include <set>
#include <sstream>

#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/common.h"
#include "tsr/prims/shard_map.h"
#include "tsr/shard_map.h"
#include "tsr/sharding/body_mesh.h"
#include "tsr/transforms/ad.h"

namespace tsr {
namespace detail {
namespace {

// The spec's Explicit axes only: what an argument's type must show (Auto axes never
// appear in types; the lowering lays the argument out along them as the spec says).
PartitionSpec explicit_part(const PartitionSpec& p, const AbstractMesh& am) {
  std::vector<PartitionEntry> e = p.entries();
  for (auto& x : e) {
    Axes keep;
    for (const auto& a : x.axes())
      if (am.axis_type(a) == AxisType::Explicit) keep.push_back(a);
    if (keep.size() != x.axes().size()) x = PartitionEntry(keep);
  }
  return PartitionSpec(e);
}

// An argument's sharding split per dimension into its manual axes and the rest (the
// block keeps those: partial manual, §2.4). The manual ones must be major, so that a
// device's block is contiguous.
std::pair<std::vector<PartitionEntry>, std::vector<PartitionEntry>> split_manual(
    const std::vector<PartitionEntry>& e, const std::set<std::string>& mset,
    const std::string& path, const ArrayType& t) {
  std::vector<PartitionEntry> man, rest;
  for (const auto& x : e) {
    Axes m, r;
    for (const auto& a : x.axes()) {
      if (!mset.count(a)) {
        r.push_back(a);
      } else if (!r.empty()) {
        throw NotImplementedError(
            "[shard_map] " + path + " of type " + short_type(t) + " is sharded over " + x.repr() +
            ", a non-manual axis before the manual axis '" + a +
            "'. Got that order; expected the manual axes major in each dimension. Reshard "
            "the argument first.");
      } else {
        m.push_back(a);
      }
    }
    man.emplace_back(m);
    rest.emplace_back(r);
  }
  return {man, rest};
}

// Checks a spec (in or out) against the manual axes and the rank; returns it
// normalized to the rank.
PartitionSpec check_spec(const PartitionSpec& p, int rank, const std::set<std::string>& manual,
                         const std::string& which, const std::string& path, const ArrayType& t) {
  if (!p.unreduced().empty() || !p.reduced().empty())
    throw NotImplementedError("[shard_map] unreduced/reduced in shard_map " + which +
                              " are not supported yet. Got " + p.repr() + " for " + path +
                              "; expected a spec of mesh axes. Reduce the value first.");
  std::set<std::string> seen;
  for (const auto& e : p.entries())
    for (const auto& a : e.axes()) {
      if (!manual.count(a))
        throw ValueError(
            "[shard_map] shard_map " + which + " argument must refer to an axis marked as manual " +
            prim::axis_names_tuple(std::vector<std::string>(manual.begin(), manual.end())) +
            ", but: " + p.repr() + " for " + path + " refers to '" + a +
            "'. Name only the manual axes (axis_names).");
      if (!seen.insert(a).second)
        throw ValueError("[shard_map] shard_map " + which + " " + p.repr() + " for " + path +
                         " names mesh axis '" + a + "' twice. Got that; expected each axis once.");
    }
  if (p.size() > rank)
    throw ValueError("[shard_map] shard_map applied to the function was given an " + which +
                     " entry which is too long: " + p.repr() + " for " + path + " of type " +
                     short_type(t) + " (rank " + std::to_string(rank) +
                     "). Give at most one entry per dimension. For scalar values (rank 0), "
                     "consider using an " +
                     which + " entry of `P()`." +
                     (which == "out_specs"
                          ? " In particular, for rank 0 outputs which are not constant over the "
                            "mesh, add at least one (singleton) axis to them so that they can be "
                            "concatenated using out_specs."
                          : ""));
  return p.normalized(rank);
}

int64_t prod_of(const PartitionEntry& e, const AbstractMesh& m) {
  int64_t p = 1;
  for (const auto& a : e.axes()) p *= m.axis_size(a);
  return p;
}

}  // namespace

std::vector<Array> shard_map_flat(const FlatFn& f, const std::vector<Array>& args0,
                                  const std::vector<std::optional<PartitionSpec>>& in_specs,
                                  const std::vector<std::string>& paths,
                                  const std::function<std::vector<PartitionSpec>()>& out_specs,
                                  const ShardMapOptions& o, const std::string& fn_name) {
  Mesh ctx = get_mesh();
  if (o.mesh && o.mesh->empty())
    throw ValueError(
        "[shard_map] shard_map requires a non-empty mesh. Got an empty Mesh; "
        "expected a mesh with axes. Pass make_mesh(...).");
  if (!o.mesh && ctx.empty())
    throw ValueError(
        "[shard_map] The context mesh cannot be empty. Use `MeshScope scope(mesh)` "
        "(or set_mesh) to enter into a mesh context, or pass .mesh.");
  const Mesh top = o.mesh ? *o.mesh : ctx;  // as the user gave it (no Manual axes)
  Mesh mesh = top;
  if (o.mesh && !ctx.empty() && !(ctx.abstract_mesh() == o.mesh->abstract_mesh()))
    throw ValueError("[shard_map] The context mesh " + ctx.abstract_mesh().str() +
                     " should match the mesh passed to shard_map " + o.mesh->abstract_mesh().str() +
                     ". Enter the shard_map's mesh, or drop .mesh.");
  // Nested (§2.4): inside a body the mesh is the body's, its manual axes typed Manual.
  const AbstractMesh cur = get_abstract_mesh();
  if (!cur.manual_axes().empty()) {
    if (cur.axis_names() != mesh.abstract_mesh().axis_names() ||
        cur.axis_sizes() != mesh.abstract_mesh().axis_sizes())
      throw ValueError("[shard_map] The context mesh " + cur.str() +
                       " should match the mesh passed to shard_map " + mesh.abstract_mesh().str() +
                       ". Got a nested shard_map over another mesh; expected the enclosing "
                       "shard_map's mesh. Drop .mesh.");
    mesh = Mesh(mesh.devices(), cur.axis_sizes(), cur.axis_names(), cur.axis_types());
  }
  const AbstractMesh& am = mesh.abstract_mesh();
  std::vector<std::string> listed = o.axis_names.empty() ? am.axis_names() : o.axis_names;
  for (const auto& a : listed)
    if (am.axis_index(a) < 0)
      throw ValueError(
          "[shard_map] shard_map requires axis_names=" + prim::axis_names_tuple(listed) +
          " to be a subset of mesh.axis_names=" + prim::axis_names_tuple(am.axis_names()) +
          ". Name axes of the mesh.");
  std::vector<std::string> manual;  // newly manual: the enclosing body's axes already are
  for (const auto& a : listed)
    if (am.axis_type(a) != AxisType::Manual) manual.push_back(a);
  if (manual.empty())
    throw ValueError("[shard_map] a nested shard_map makes no new axis manual. Got axis_names=" +
                     prim::axis_names_tuple(listed) + ", all manual already in " + am.str() +
                     "; expected at least one other axis. Call the function directly.");
  const std::set<std::string> mset(manual.begin(), manual.end());
  std::vector<std::pair<std::string, AxisType>> u;
  for (const auto& a : manual) u.emplace_back(a, AxisType::Manual);
  const AbstractMesh inner = am.update_axis_types(u);

  // Input specs: given, or read from the argument's type; the argument moved onto
  // the mesh when it is not on it, checked against the spec when it is.
  std::vector<Array> args = args0;
  std::vector<PartitionSpec> specs;
  std::vector<ArrayType> block;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArrayType& t = args[i].type();
    bool on_mesh = !t.sharding.mesh().empty();
    PartitionSpec p;
    if (in_specs[i]) {
      p = *in_specs[i];
    } else if (on_mesh) {
      p = PartitionSpec(split_manual(entries_of(t), mset, paths[i], t).first);
    }
    p = check_spec(p, t.ndim(), mset, "in_specs", paths[i], t);
    std::vector<PartitionEntry> pe = p.entries();
    for (int d = 0; d < t.ndim(); ++d) {
      int64_t k = prod_of(pe[d], am);
      if (t.shape[d] % k != 0)
        throw ValueError("[shard_map] shard_map applied to the function '" + fn_name +
                         "' was given argument arrays with axis sizes that are not evenly "
                         "divisible by the corresponding mesh axis sizes: " +
                         paths[i] + " of type " + short_type(t) + " with in_specs " + p.repr() +
                         ", but " + std::to_string(k) + " does not evenly divide " +
                         std::to_string(t.shape[d]) + ". Pad the array or change in_specs.");
    }
    NamedSharding want(mesh, p);
    std::vector<PartitionEntry> rest(static_cast<size_t>(t.ndim()));  // the block's own
    if (!on_mesh) {
      // device_put, eager or traced: under a trace it is a reshard of the spec's Explicit
      // part and a sharding constraint of its Auto part (reshard refuses Auto axes).
      args[i] = device_put(args[i], want);
    } else {
      auto [man, other] = split_manual(entries_of(t), mset, paths[i], t);
      rest = other;
      if (!(man == explicit_part(p, am).normalized(t.ndim()).entries()))
        throw ValueError("[shard_map] in_specs " + p.repr() + " for " + paths[i] +
                         " differ from the argument's sharding " + t.sharding.spec().repr() +
                         ". Got type " + short_type(t) +
                         "; expected equal specs (in Explicit mode in_specs is an assertion). "
                         "Reshard the argument, or leave its in_specs to be inferred.");
    }
    ArrayType b;
    b.shape = t.shape;
    for (int d = 0; d < t.ndim(); ++d) b.shape[d] /= prod_of(pe[d], am);
    b.dtype = t.dtype;
    b.weak = t.weak;
    b.sharding = type_sharding(NamedSharding(inner, PartitionSpec(rest)), b.shape);
    if (o.check_vma) {
      b.vma = t.vma;  // nested: what it varies over in the enclosing body
      for (const auto& e : pe)
        for (const auto& a : e.axes()) b.vma.insert(a);
    }
    specs.push_back(p);
    block.push_back(b);
  }

  // The body at block types; outputs typed against their specs (§3.7).
  std::vector<PartitionSpec> out_p;
  Program body;
  {
    MeshScope mesh_scope(top);  // a nested shard_map finds the devices
    AbstractMeshScope scope(inner);
    CheckVmaScope vma_scope(o.check_vma);
    BodyMeshScope body_mesh_scope(mesh);  // visualize names the body's devices
    body = trace_program(
        [&](const std::vector<Array>& in) {
          std::vector<Array> outs = f(in);
          std::vector<PartitionSpec> want = out_specs();
          out_p.clear();
          for (size_t j = 0; j < outs.size(); ++j) {
            std::string path = "output " + std::to_string(j);
            Array& y = outs[j];
            PartitionSpec p = check_spec(want[j], y.ndim(), mset, "out_specs", path, y.type());
            std::set<std::string> named;
            for (const auto& e : p.entries())
              for (const auto& a : e.axes()) named.insert(a);
            if (o.check_vma) {
              std::vector<std::string> add;  // implicit pvary: an invariant output tiled
              for (const auto& a : inner.axis_names())
                if (named.count(a) && !y.type().vma.count(a)) add.push_back(a);
              if (!add.empty()) y = pvary(y, add);
              std::set<std::string> extra;  // the enclosing body's axes are its business
              for (const auto& a : y.type().vma)
                if (!named.count(a) && mset.count(a)) extra.insert(a);
              if (!extra.empty()) {
                std::ostringstream os;
                os << "[shard_map] shard_map applied to the function '" << fn_name
                   << "' was given out_specs which require replication which can't be "
                      "statically inferred given the mesh:\n\nThe mesh given has shape (";
                for (size_t a = 0; a < am.axis_sizes().size(); ++a)
                  os << (a ? ", " : "") << am.axis_sizes()[a];
                os << ") with corresponding axis names " << prim::axis_names_tuple(am.axis_names())
                   << ".\n\n* out_specs is " << want[j].repr()
                   << " which implies that the corresponding output value is only varying "
                      "across mesh axes "
                   << prim::axis_set_str(named) << " and not " << prim::axis_set_str(extra)
                   << ", but it was inferred to be possibly varying over "
                   << prim::axis_set_str(y.type().vma)
                   << "\n\nCheck if these output values are meant to be replicated over those "
                      "mesh axes. If not, consider revising the corresponding out_specs "
                      "entries. If so, consider disabling the check by passing the "
                      "check_vma=false argument to `tsr::shard_map`.";
                throw ValueError(os.str());
              }
            }
            out_p.push_back(p);
          }
          return outs;
        },
        block,
        // A closed-over array is an invariant block (as if passed with P()).
        [&](const ArrayType& t) {
          ArrayType b = t;  // nested: keeps what it varies over in the enclosing body
          b.sharding = type_sharding(NamedSharding(inner, PartitionSpec()), b.shape);
          return b;
        });
  }
  // Captured arrays become leading inputs laid out P() (closing over = passing with P()).
  for (size_t c = 0; c < body.consts.size(); ++c) {
    const Array& k = body.consts[c];
    if (!k.type().sharding.mesh().empty() && !k.type().sharding.is_fully_replicated())
      throw NotImplementedError(
          "[shard_map] Closing over inputs to shard_map where the input is sharded on `Explicit` "
          "axes is not implemented. Got a captured " +
          short_type(k.type()) +
          "; expected it replicated. Pass it as an argument with its in_specs.");
  }
  std::vector<Array> call_args;
  std::vector<PartitionSpec> call_specs;
  for (const auto& k : body.consts) {
    NamedSharding rep(mesh, PartitionSpec());
    call_args.push_back(k.type().sharding.mesh().empty() ? device_put(k, rep) : k);
    call_specs.push_back(PartitionSpec().normalized(k.ndim()));
  }
  Program lifted = lift_consts(body);
  call_args.insert(call_args.end(), args.begin(), args.end());
  call_specs.insert(call_specs.end(), specs.begin(), specs.end());
  auto prim =
      std::make_shared<prim::ShardMap>(std::make_shared<const Program>(std::move(lifted)), mesh,
                                       manual, call_specs, out_p, o.check_vma, fn_name);
  return detail::bind(prim, call_args);
}

}  // namespace detail

}  // namespace tsr
