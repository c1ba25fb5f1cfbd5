// vmap's entry and exit: the checks of jax.vmap (axes in range, one batch size, the
// sharding rules of spec §12.16), the per-example trace, the batch pass, and moving
// each output's batch dimension to its out_axes.
#include <map>
#include <sstream>

#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/common.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/batch.h"
#include "tsr/vmap.h"

namespace tsr::detail {

namespace {

// JAX's message for mapped axes of different sizes: the most common size first.
[[noreturn]] void raise_sizes(const std::vector<Array>& args, const std::vector<int>& dims,
                              const std::vector<std::string>& paths,
                              std::optional<int64_t> axis_size) {
  std::map<int64_t, std::vector<size_t>> by;
  for (size_t i = 0; i < args.size(); ++i)
    if (dims[i] >= 0) by[args[i].shape()[dims[i]]].push_back(i);
  std::vector<std::pair<int64_t, std::vector<size_t>>> groups(by.begin(), by.end());
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::ostringstream os;
  os << "[vmap] vmap got inconsistent sizes for array axes to be mapped:";
  if (axis_size) os << "\n  * axis_size was given as " << *axis_size << ";";
  for (size_t g = 0; g < groups.size(); ++g) {
    size_t i = groups[g].second[0];
    std::string where = "axis " + std::to_string(dims[i]) + " of argument " + paths[i] +
                        " of type " + short_type(args[i].type());
    if (groups[g].second.size() > 1)
      os << "\n  * most axes (" << groups[g].second.size() << " of them) had size "
         << groups[g].first << ", e.g. " << where << ";";
    else
      os << "\n  * one axis had size " << groups[g].first << ": " << where << ";";
  }
  os << "\nExpected one size for every mapped axis. Map arguments of equal size, or pass "
        "none in in_axes for the ones that are not batched.";
  throw ValueError(os.str());
}

}  // namespace

VmapFlat vmap_flat(const FlatFn& f, const std::vector<Array>& args,
                   const std::vector<VmapAxis>& in_axes, const std::vector<std::string>& paths,
                   const VmapOptions& o) {
  const size_t n = args.size();
  std::vector<int> dims(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (!in_axes[i]) continue;
    int nd = args[i].ndim(), a = *in_axes[i], d = a < 0 ? a + nd : a;
    if (d < 0 || d >= nd)
      throw ValueError("[vmap] vmap was requested to map its argument along axis " +
                       std::to_string(a) + ", which implies that its rank should be at least " +
                       std::to_string(a < 0 ? -a : a + 1) + ", but is only " + std::to_string(nd) +
                       " (its shape is " + shape_str(args[i].shape()) + "). Got argument " +
                       paths[i] + " of type " + short_type(args[i].type()) +
                       "; expected an axis within its rank. Fix in_axes, or pass none for it.");
    dims[i] = d;
  }
  // One batch size.
  std::optional<int64_t> size = o.axis_size;
  bool consistent = true;
  for (size_t i = 0; i < n; ++i) {
    if (dims[i] < 0) continue;
    int64_t s = args[i].shape()[dims[i]];
    if (size && *size != s) consistent = false;
    if (!size) size = s;
  }
  if (!consistent) raise_sizes(args, dims, paths, o.axis_size);
  if (!size)
    throw ValueError(
        "[vmap] vmap must have at least one non-None value in in_axes. Got every argument "
        "unbatched and no axis_size; expected a batched argument. Pass an in_axes entry that "
        "is not none, or axis_size.");
  // The batch dimension's sharding (spec §12.16): the same entry on every mapped input.
  std::optional<PartitionEntry> entry;
  AbstractMesh mesh;
  size_t first = 0;
  for (size_t i = 0; i < n; ++i) {
    if (dims[i] < 0) continue;
    std::vector<PartitionEntry> e = entries_of(args[i].type());
    PartitionEntry ei = dims[i] < static_cast<int>(e.size()) ? e[dims[i]] : PartitionEntry();
    if (!entry) {
      entry = ei;
      first = i;
    } else if (!(ei == *entry)) {
      throw ValueError(
          "[vmap] Mapped away dimension of inputs passed to vmap should be sharded the same. "
          "Got inconsistent axis specs: " +
          entry->repr() + " vs " + ei.repr() + " (" + paths[first] + " of type " +
          short_type(args[first].type()) + ", " + paths[i] + " of type " +
          short_type(args[i].type()) +
          "); expected one layout of the batch dimension. Reshard them to one layout first.");
    }
    if (!ei.is_none()) mesh = args[i].type().sharding.mesh();
  }
  PartitionEntry e = entry.value_or(PartitionEntry());
  std::vector<Array> in = args;
  if (!o.spmd_axis_name.empty()) {
    const Axes names(o.spmd_axis_name);
    if (!e.is_none() && !(e == PartitionEntry(names)))
      throw ValueError(
          "[vmap] Only one of spmd_axis_name or arrays sharded on `Explicit` mesh axis type is "
          "allowed. Got spmd_axis_name=" +
          prim::axis_names_tuple(o.spmd_axis_name) +
          " and arrays sharded on explicit_mesh_axis=" + prim::axis_names_tuple(e.axes()) +
          "; expected one of them. Drop spmd_axis_name, or reshard the arguments.");
    // The mesh the batch is split over: the arguments' (replicated ones included), else
    // the context's. Names it lacks are left to the rules that use them (a shard_map
    // checks them against its own mesh), as JAX, which needs no mesh here.
    AbstractMesh m = mesh;
    for (size_t i = 0; i < n && m.empty(); ++i) m = args[i].type().sharding.mesh();
    if (m.empty()) m = get_abstract_mesh();
    bool on_m = !m.empty(), all_auto = true;
    for (const auto& a : names) {
      on_m = on_m && m.axis_index(a) >= 0;
      all_auto = all_auto && on_m && m.axis_type(a) == AxisType::Auto;
    }
    if (e.is_none() && on_m) {
      PartitionEntry s(names);
      int64_t k = entry_size(s, m);
      if (*size % k != 0)
        throw ValueError("[vmap] spmd_axis_name " + prim::axis_names_tuple(o.spmd_axis_name) +
                         " of size " + std::to_string(k) + " does not divide the batch size " +
                         std::to_string(*size) + ". Got a batch of " + std::to_string(*size) +
                         "; expected a multiple of " + std::to_string(k) +
                         ". Pad the batch, or shard it over fewer devices.");
      // On Auto axes the layout is the compiler's (and shard_map's in_specs): types and
      // arguments stay as they are. On Explicit ones the batched arguments move onto
      // those axes along the batch dimension.
      if (!all_auto) {
        e = s;
        mesh = m;
        for (size_t i = 0; i < n; ++i) {
          if (dims[i] < 0) continue;
          ArrayType t = args[i].type();
          std::vector<PartitionEntry> es = entries_of(t);
          es.resize(static_cast<size_t>(t.ndim()));
          es[dims[i]] = e;
          AbstractMesh am = t.sharding.mesh().empty() ? m : t.sharding.mesh();
          in[i] = reshard(args[i], NamedSharding(am, with_sets_of(es, t.sharding.spec())));
        }
      }
    }
  }
  // Unmapped inputs may not use the vmapped mesh axes.
  for (size_t i = 0; i < n && !e.is_none(); ++i) {
    if (dims[i] >= 0) continue;
    std::vector<std::string> used = args[i].type().sharding.spec().partition_axes();
    for (const auto& a : e.axes())
      if (std::find(used.begin(), used.end(), a) != used.end())
        throw ValueError(
            "[vmap] Unmapped values passed to vmap cannot be sharded along the mesh axis you "
            "are vmapping over. Got type: " +
            short_type(args[i].type()) + ", in_axes: None and vmapped mesh axis: " +
            prim::axis_names_tuple(e.axes()) + " (argument " + paths[i] +
            "); expected it unsharded over that axis. Reshard it, or batch it.");
  }
  // The body sees one example.
  std::vector<ArrayType> per(n);
  for (size_t i = 0; i < n; ++i)
    per[i] = dims[i] >= 0 ? unbatched_type(seen_type(in[i]), dims[i]) : seen_type(in[i]);
  VmapNameScope names(o.axis_name, *size);  // collectives over axis_name (§6.2)
  Program p = trace_program(f, per);
  BatchAxisScope scope({*size, e, mesh, o.axis_name, o.spmd_axis_name});
  BatchResult r = batch_eval(p, in, dims);
  return {r.outs, r.dims, *size, e, mesh};
}

std::vector<Array> vmap_outputs(const VmapFlat& r, const std::vector<VmapAxis>& out_axes,
                                const std::vector<std::string>& paths) {
  BatchAxisScope scope({r.size, r.entry, r.mesh, "", {}});
  std::vector<Array> outs;
  for (size_t j = 0; j < r.outs.size(); ++j) {
    const Array& x = r.outs[j];
    int d = r.dims[j];
    if (!out_axes[j]) {
      if (d >= 0)
        throw ValueError("[vmap] vmap has mapped output but out_axes is None. Got result " +
                         paths[j] + " of type " + short_type(x.type()) +
                         " batched; expected out_axes none only for results that do not "
                         "depend on a batched argument. Give it an out_axes entry.");
      outs.push_back(x);
      continue;
    }
    int rank = x.ndim() + (d >= 0 ? 0 : 1), a = *out_axes[j], to = a < 0 ? a + rank : a;
    if (to < 0 || to >= rank)
      throw ValueError("[vmap] out_axes " + std::to_string(a) + " is out of range for result " +
                       paths[j] + ", whose batched rank is " + std::to_string(rank) +
                       ". Got that axis; expected one in [" + std::to_string(-rank) + ", " +
                       std::to_string(rank) + "). Fix out_axes.");
    outs.push_back(d >= 0 ? move_batch(x, d, to) : move_batch(batch_at_front(x, -1), 0, to));
  }
  return outs;
}

}  // namespace tsr::detail
