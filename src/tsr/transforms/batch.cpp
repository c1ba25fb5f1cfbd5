// The batch pass: an interpreter over a Program that binds each equation, asking the
// equation's batching rule when an input carries the batch dimension; batch_program
// wraps it in a trace. Also the helpers the family files' batching rules share.
#include "tsr/transforms/batch.h"

#include <unordered_map>

#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/transforms/ad.h"

namespace tsr::detail {

namespace {
thread_local const BatchAxis* t_axis = nullptr;

std::vector<PartitionEntry> padded_entries(const ArrayType& t) {
  std::vector<PartitionEntry> e = entries_of(t);
  e.resize(static_cast<size_t>(t.ndim()));
  return e;
}
}  // namespace

const BatchAxis& batch_axis() {
  if (!t_axis)
    throw ValueError(
        "[vmap] a batching rule ran outside of vmap. Got no vmap in progress; expected "
        "batching rules to run only from the batch pass.");
  return *t_axis;
}

BatchAxisScope::BatchAxisScope(BatchAxis a) : prev_(t_axis), axis_(std::move(a)) {
  t_axis = &axis_;
}
BatchAxisScope::~BatchAxisScope() { t_axis = prev_; }

void note_batch_rule(const char* prim) { RuleLog::note("batch", prim); }

ArrayType batched_type(const ArrayType& t, int d) {
  const BatchAxis& b = batch_axis();
  ArrayType r = t;
  r.shape.insert(r.shape.begin() + d, b.size);
  std::vector<PartitionEntry> e = padded_entries(t);
  e.insert(e.begin() + d, b.entry);
  AbstractMesh mesh = t.sharding.mesh().empty() ? b.mesh : t.sharding.mesh();
  if (mesh.empty()) return r;  // off-mesh values stay off the mesh
  r.sharding = NamedSharding(mesh, with_sets_of(e, t.sharding.spec()));
  return r;
}

ArrayType unbatched_type(const ArrayType& t, int d) {
  ArrayType r = t;
  r.shape.erase(r.shape.begin() + d);
  if (t.sharding.mesh().empty()) return r;
  std::vector<PartitionEntry> e = padded_entries(t);
  e.erase(e.begin() + d);
  r.sharding = NamedSharding(t.sharding.mesh(), with_sets_of(e, t.sharding.spec()));
  return r;
}

std::optional<NamedSharding> batched_sharding(const std::optional<NamedSharding>& s, int d,
                                              const char* op) {
  if (!s) return s;
  const BatchAxis& b = batch_axis();
  std::vector<PartitionEntry> e = s->spec().entries();
  while (static_cast<int>(e.size()) < d) e.emplace_back();
  for (const auto& a : b.entry.axes())
    for (const auto& x : e)
      for (const auto& y : x.axes())
        if (a == y)
          throw ValueError(std::string("[") + op + "] the out_sharding " + s->spec().repr() +
                           " inside vmap shards a dimension over mesh axis '" + a +
                           "', which the vmapped dimension is sharded over. Got the axis "
                           "used twice; expected the body's shardings to leave the vmapped "
                           "axis to vmap. Shard that dimension over another mesh axis.");
  e.insert(e.begin() + d, b.entry);
  return NamedSharding(s->mesh(), with_sets_of(e, s->spec()));
}

std::vector<ArrayType> per_example_out(const Primitive& prim, const std::vector<Array>& args,
                                       const std::vector<int>& dims) {
  std::vector<ArrayType> in;
  for (size_t i = 0; i < args.size(); ++i)
    in.push_back(dims[i] >= 0 ? unbatched_type(args[i].type(), dims[i]) : args[i].type());
  return infer_types(prim, in);
}

std::optional<NamedSharding> batched_out_sharding(const Primitive& prim,
                                                  const std::vector<Array>& args,
                                                  const std::vector<int>& dims, size_t j, int at) {
  ArrayType t = per_example_out(prim, args, dims).at(j);
  if (t.sharding.mesh().empty()) return std::nullopt;
  return batched_type(t, at).sharding;
}

std::vector<int> shifted(std::vector<int> dims, int by) {
  for (int& d : dims) d += by;
  return dims;
}

Array move_batch(const Array& x, int from, int to) {
  return from == to ? x : moveaxis(x, from, to);
}

Array batch_at_front(const Array& x, int from) {
  if (from >= 0) return move_batch(x, from, 0);
  ArrayType t = batched_type(x.type(), 0);
  std::vector<int> dims;
  for (int d = 0; d < x.ndim(); ++d) dims.push_back(d + 1);
  if (t.sharding.mesh().empty()) return broadcast_in_dim(x, t.shape, dims);
  return broadcast_in_dim(x, t.shape, dims, t.sharding);
}

Array batch_full(const Array& a, int d, const ArrayType& like) {
  Array m = d >= 0 ? move_batch(a, d, 0) : a;
  if (m.type().shape == like.shape) return m;
  // Batched per-example scalar [B] -> dims {0}; unbatched x -> its trailing dims.
  std::vector<int> dims;
  if (d >= 0) {
    dims.push_back(0);
  } else {
    for (int k = 0; k < m.ndim(); ++k) dims.push_back(like.ndim() - m.ndim() + k);
  }
  if (like.sharding.mesh().empty()) return broadcast_in_dim(m, like.shape, dims);
  return broadcast_in_dim(m, like.shape, dims, like.sharding);
}

Batched batch_elementwise(const Primitive& prim, const std::vector<Array>& args,
                          const std::vector<int>& dims) {
  int rank = 0;  // the per-example output rank
  for (size_t i = 0; i < args.size(); ++i)
    rank = std::max(rank, args[i].ndim() - (dims[i] >= 0 ? 1 : 0));
  std::vector<Array> ins;
  for (size_t i = 0; i < args.size(); ++i) {
    const Array& a = args[i];
    if (dims[i] >= 0) {
      Array m = move_batch(a, dims[i], 0);
      if (m.ndim() == 1 && rank > 0) {  // a per-example scalar: [B] -> [B, 1, ...]
        std::vector<int> one;
        for (int d = 1; d <= rank; ++d) one.push_back(d);
        m = expand_dims(m, one);
      }
      ins.push_back(m);
    } else {
      ins.push_back(a.ndim() == 0 ? a : expand_dims(a, 0));
    }
  }
  std::vector<Array> outs = detail::bind(prim.shared_from_this(), ins);
  return {outs, std::vector<int>(outs.size(), 0)};
}

Batched batch_unary_front(const PrimPtr& shifted, const Array& x, int dim) {
  std::vector<Array> outs = detail::bind(shifted, {move_batch(x, dim, 0)});
  return {outs, std::vector<int>(outs.size(), 0)};
}

Batched batch_by_loop(const Primitive& prim, const std::vector<Array>& args,
                      const std::vector<int>& dims) {
  std::vector<std::vector<Array>> slices(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (dims[i] < 0) continue;
    Array x = args[i];
    ArrayType t = x.type();
    std::vector<PartitionEntry> e = padded_entries(t);
    if (!e[dims[i]].is_none()) {  // unstack takes the batch dimension whole
      e[dims[i]] = PartitionEntry();
      x = reshard(x, NamedSharding(t.sharding.mesh(), with_sets_of(e, t.sharding.spec())));
    }
    slices[i] = unstack(x, dims[i]);
  }
  std::vector<std::vector<Array>> per;  // per output, one result per example
  for (int64_t b = 0; b < batch_axis().size; ++b) {
    std::vector<Array> ins;
    for (size_t i = 0; i < args.size(); ++i)
      ins.push_back(dims[i] >= 0 ? slices[i][static_cast<size_t>(b)] : args[i]);
    std::vector<Array> outs = detail::bind(prim.shared_from_this(), ins);
    per.resize(outs.size());
    for (size_t j = 0; j < outs.size(); ++j) per[j].push_back(outs[j]);
  }
  Batched r;
  for (auto& col : per) {
    r.outs.push_back(stack(col, 0));
    r.dims.push_back(0);
  }
  return r;
}

namespace {

// The rule's output against the type vmap's rules promise (p's type with the batch
// dimension inserted): shape and dtype are a bug when they differ; the sharding is
// made so (a rule that leaves the batch dimension unsharded when the vmap's is).
Array checked_output(const Primitive& prim, Array out, int d, const ArrayType& per_example) {
  ArrayType want = batched_type(per_example, d);
  const ArrayType& got = out.type();
  if (got.shape != want.shape || got.dtype != want.dtype)
    throw TypeError(std::string("[vmap] the batching rule of '") + prim.name() + "' returned " +
                    got.str() + " with its batch dimension at " + std::to_string(d) +
                    ". Got that; expected " + want.str() +
                    ". This is a bug in Tessera: please report it.");
  if (want.sharding.mesh().empty() || got.sharding == want.sharding) return out;
  return reshard(out, want.sharding);
}

}  // namespace

BatchResult batch_eval(const Program& p, const std::vector<Array>& args,
                       const std::vector<int>& dims) {
  std::unordered_map<const Var*, std::pair<Array, int>> env;
  for (size_t i = 0; i < p.const_vars.size(); ++i) env[p.const_vars[i].get()] = {p.consts[i], -1};
  for (size_t i = 0; i < p.in_vars.size(); ++i) env[p.in_vars[i].get()] = {args.at(i), dims.at(i)};
  for (const Eqn& e : p.eqns) {
    EqnMeshScope ms(e);
    std::vector<Array> ins;
    std::vector<int> ds;
    bool any = false;
    for (const auto& v : e.ins) {
      const auto& [a, d] = env.at(v.get());
      ins.push_back(a);
      ds.push_back(d);
      any = any || d >= 0;
    }
    // A collective over this vmap's axis_name acts on the batch even when unbatched.
    bool named = !batch_axis().name.empty() && e.prim->uses_axis_name(batch_axis().name);
    if (!any && !named) {
      std::vector<Array> outs = detail::bind(e.prim, ins);
      for (size_t j = 0; j < e.outs.size(); ++j) env[e.outs[j].get()] = {outs[j], -1};
      continue;
    }
    note_batch_rule(e.prim->name());
    Batched r = e.prim->batch(ins, ds);
    if (r.outs.size() != e.outs.size() || r.dims.size() != e.outs.size())
      throw TypeError(std::string("[vmap] the batching rule of '") + e.prim->name() +
                      "' returned " + std::to_string(r.outs.size()) + " outputs for " +
                      std::to_string(e.outs.size()) +
                      ". Got a malformed rule result; expected one output and one batch "
                      "dimension per output. This is a bug in Tessera: please report it.");
    for (size_t j = 0; j < e.outs.size(); ++j) {
      Array o = r.dims[j] >= 0 ? checked_output(*e.prim, r.outs[j], r.dims[j], e.outs[j]->type)
                               : r.outs[j];
      env[e.outs[j].get()] = {o, r.dims[j]};
    }
  }
  BatchResult out;
  for (const auto& v : p.out_vars) {
    const auto& [a, d] = env.at(v.get());
    out.outs.push_back(a);
    out.dims.push_back(d);
  }
  return out;
}

Program batch_program(const Program& p, const std::vector<int>& in_dims, std::vector<int>& out_dims,
                      bool force_front) {
  std::vector<ArrayType> in_t;
  for (size_t i = 0; i < p.in_vars.size(); ++i)
    in_t.push_back(in_dims.at(i) >= 0 ? batched_type(p.in_vars[i]->type, in_dims[i])
                                      : p.in_vars[i]->type);
  out_dims.clear();
  return trace_program(
      [&](const std::vector<Array>& a) {
        BatchResult r = batch_eval(p, a, in_dims);
        out_dims = r.dims;
        if (force_front)
          for (size_t j = 0; j < r.outs.size(); ++j) {
            r.outs[j] = batch_at_front(r.outs[j], r.dims[j]);
            out_dims[j] = 0;
          }
        return r.outs;
      },
      in_t);
}

std::vector<Array> batch_fn_front(const FlatFn& f, const std::vector<Array>& args,
                                  const std::vector<int>& dims, const BatchAxis& axis) {
  BatchAxisScope scope(axis);
  std::vector<ArrayType> per;
  for (size_t i = 0; i < args.size(); ++i)
    per.push_back(dims[i] >= 0 ? unbatched_type(args[i].type(), dims[i]) : args[i].type());
  Program p = trace_program(f, per);
  BatchResult r = batch_eval(p, args, dims);
  for (size_t j = 0; j < r.outs.size(); ++j) r.outs[j] = batch_at_front(r.outs[j], r.dims[j]);
  return r.outs;
}

}  // namespace tsr::detail
