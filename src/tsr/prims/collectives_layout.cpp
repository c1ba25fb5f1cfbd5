#include "tsr/prims/collectives_layout.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "tsr/collectives.h"
#include "tsr/error.h"
#include "tsr/indexing.h"
#include "tsr/ops.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/common.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("all_gather") && register_primitive("all_gather_invariant") &&
    register_primitive("reduce_scatter") && register_primitive("ppermute") &&
    register_primitive("all_to_all") && register_primitive("pbroadcast") &&
    declare_ad("all_gather", AdKind::Linear) &&
    declare_ad("all_gather_invariant", AdKind::Linear) &&
    declare_ad("reduce_scatter", AdKind::Linear) && declare_ad("ppermute", AdKind::Linear) &&
    declare_ad("all_to_all", AdKind::Linear) && declare_ad("pbroadcast", AdKind::Linear);

using K = LayoutCollective::Kind;

// The user-facing op's name (errors): psum_scatter binds reduce_scatter.
const char* op_name(K k) {
  switch (k) {
    case K::AllGather:
      return "all_gather";
    case K::ReduceScatter:
      return "psum_scatter";
    case K::Ppermute:
      return "ppermute";
    case K::AllToAll:
      return "all_to_all";
    case K::Pbroadcast:
      return "pbroadcast";
  }
  return "collective";
}

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

std::string pairs_str(const std::vector<std::pair<int, int>>& perm) {
  std::string s = "(";
  for (size_t i = 0; i < perm.size(); ++i)
    s += (i ? ", (" : "(") + std::to_string(perm[i].first) + ", " + std::to_string(perm[i].second) +
         ")";
  return s + (perm.size() == 1 ? ",)" : ")");
}

void check_dim(int d, int lo, int hi, const char* op, const char* what, const ArrayType& t) {
  if (d < lo || d > hi)
    throw ValueError(std::string("[") + op + "] " + what + "=" + std::to_string(d) +
                     " is out of range for an operand of type " + short_type(t) + ". Got " + what +
                     "=" + std::to_string(d) + "; expected " + std::to_string(lo) + " <= " + what +
                     " <= " + std::to_string(hi) + ". Pass a dimension of the block.");
}
}  // namespace

LayoutCollective::LayoutCollective(Params p) : p_(std::move(p)) {
  for (const auto& a : p_.axes)
    if (vmap_axis_size(a)) vmap_axes_.insert(a);
}

const char* LayoutCollective::name() const {
  switch (p_.kind) {
    case K::AllGather:
      return p_.invariant ? "all_gather_invariant" : "all_gather";
    case K::ReduceScatter:
      return "reduce_scatter";
    default:
      return op_name(p_.kind);
  }
}

std::vector<ArrayType> LayoutCollective::infer(const std::vector<ArrayType>& in) const {
  const char* op = op_name(p_.kind);
  const std::string pre = std::string("[") + op + "] ";
  check_axes_bound(p_.axes, op);
  AbstractMesh ctx = get_abstract_mesh();
  std::set<std::string> ax(p_.axes.begin(), p_.axes.end());
  if (ax.size() != p_.axes.size())
    throw ValueError(pre + "the axis names " + axis_names_tuple(p_.axes) +
                     " repeat an axis. Got that; expected each axis once.");
  int64_t n = 1;
  for (const auto& a : p_.axes) n *= bound_axis_size(a);
  if (!p_.groups.empty()) {
    if (p_.kind == K::Ppermute || p_.kind == K::Pbroadcast || p_.invariant)
      throw NotImplementedError(pre + name() + " does not take axis_index_groups. Got " +
                                groups_str(p_.groups) + "; expected none. " +
                                (p_.invariant ? "Gather to='varying' (the default) within groups."
                                              : "Index the whole axis instead."));
    check_no_vmap_groups(op, p_.axes, p_.groups);
    n = check_axis_index_groups(p_.groups, n, op, p_.axes);  // the group size
  }
  const std::string ns = std::to_string(n);
  ArrayType t = in.at(0);
  const int r = t.ndim();
  Shape s = t.shape;
  switch (p_.kind) {
    case K::AllGather:
      if (p_.tiled) {
        check_dim(p_.dim, 0, r - 1, op, "axis", t);
        s[p_.dim] *= n;
      } else {
        check_dim(p_.dim, 0, r, op, "axis", t);
        s.insert(s.begin() + p_.dim, n);
      }
      break;
    case K::ReduceScatter: {
      check_dim(p_.dim, 0, r - 1, op, "scatter_dimension", t);
      const std::string d = std::to_string(s[p_.dim]);
      if (p_.tiled) {
        if (s[p_.dim] % n != 0)
          throw ValueError(pre + "tiled reduce_scatter operand scatter dimension size " + d +
                           " must be divisible by shard_count " + ns + ". Got " + short_type(t) +
                           " with scatter_dimension=" + std::to_string(p_.dim) +
                           "; expected a multiple of " + ns + ". Pad the operand.");
        s[p_.dim] /= n;
      } else {
        if (s[p_.dim] != n)
          throw ValueError(pre + "reduce_scatter operand scatter dimension size " + d +
                           " must match shard count " + ns + ". Got " + short_type(t) +
                           "; expected size " + ns + " at scatter_dimension=" +
                           std::to_string(p_.dim) + ". Pass tiled=true to split it in parts.");
        s.erase(s.begin() + p_.dim);
      }
      break;
    }
    case K::Ppermute: {
      std::set<int> src, dst;
      for (const auto& [a, b] : p_.perm) {
        if (a < 0 || a >= n || b < 0 || b >= n)
          throw ValueError(pre + "ppermute pair (" + std::to_string(a) + ", " + std::to_string(b) +
                           ") names an index outside the axis. Got perm=" + pairs_str(p_.perm) +
                           "; expected indices in [0, " + ns + ") for axes " +
                           axis_names_tuple(p_.axes) + ". Index the group row-major.");
        if (!src.insert(a).second || !dst.insert(b).second)
          throw ValueError(pre + "ppermute sources and destinations must be unique, got " +
                           pairs_str(p_.perm) +
                           ". Got a repeated index; expected each source "
                           "and each destination at most once.");
      }
      break;
    }
    case K::AllToAll: {
      check_dim(p_.dim, 0, r - 1, op, "split_axis", t);
      const std::string d = std::to_string(s[p_.dim]);
      if (p_.tiled) {
        check_dim(p_.dim2, 0, r - 1, op, "concat_axis", t);
        if (s[p_.dim] % n != 0)
          throw ValueError(pre + "The size of all_to_all split_axis (" + d +
                           ") has to be divisible by the size of the named axis " +
                           axis_names_tuple(p_.axes) + " (" + ns + "). Got " + short_type(t) +
                           "; expected a multiple of " + ns + ". Pad the operand.");
        s[p_.dim] /= n;
        s[p_.dim2] *= n;
      } else {
        check_dim(p_.dim2, 0, r - 1, op, "concat_axis", t);
        if (s[p_.dim] != n)
          throw ValueError(pre +
                           "all_to_all requires the size of the mapped axis axis_name to equal "
                           "x.shape[split_axis], but they are " +
                           ns + " and " + d + " respectively. Got " + short_type(t) +
                           "; expected size " + ns + ". Pass tiled=true to split it in parts.");
        s.erase(s.begin() + p_.dim);
        s.insert(s.begin() + p_.dim2, n);
      }
      break;
    }
    case K::Pbroadcast:
      if (p_.source < 0 || p_.source >= n)
        throw ValueError(pre + "source " + std::to_string(p_.source) +
                         " is not an index of the axes " + axis_names_tuple(p_.axes) + ". Got " +
                         std::to_string(p_.source) + "; expected 0 <= source < " + ns + ".");
      break;
  }
  t.shape = s;
  // ppermute / pbroadcast move whole blocks elementwise: they keep the block's sharding
  // along non-manual axes (partial manual); the others gather it first (replicated).
  if (p_.kind != K::Ppermute && p_.kind != K::Pbroadcast)
    t.sharding = type_sharding(NamedSharding(ctx, PartitionSpec()), s);
  if (!p_.check_vma) {
    t.vma.clear();
    return {t};
  }
  for (const auto& a : p_.axes)
    if (!t.vma.count(a) && !vmap_axes_.count(a))  // a vmap's axis_name is not typed
      throw ValueError(
          pre + "Collective " + name() + " must be applied to a device-varying type, but got " +
          axis_set_str(t.vma) + " for collective acting over axis name " +
          axis_names_tuple(p_.axes) + ". Got an operand invariant over '" + a +
          "'; expected it to vary over every named axis. " +
          (p_.kind == K::Pbroadcast
               ? "pbroadcast does not pvary its operand: apply tsr::pvary first (or use "
                 "ppermute)."
               : "tsr::" + std::string(op) + " inserts pvary for you; a hand-built program must."));
  if (p_.invariant)
    for (const auto& a : p_.axes) t.vma.erase(a);
  return {t};
}

std::string LayoutCollective::params() const {
  std::string s = "axes=" + axis_names_tuple(p_.axes);
  if (!p_.groups.empty()) s += " axis_index_groups=" + groups_str(p_.groups);
  const std::string tiled = std::string(" tiled=") + (p_.tiled ? "True" : "False");
  switch (p_.kind) {
    case K::AllGather:
      return s + " axis=" + std::to_string(p_.dim) + tiled;
    case K::ReduceScatter:
      return s + " scatter_dimension=" + std::to_string(p_.dim) + tiled;
    case K::Ppermute:
      return s + " perm=" + pairs_str(p_.perm);
    case K::AllToAll:
      return s + " split_axis=" + std::to_string(p_.dim) +
             " concat_axis=" + std::to_string(p_.dim2) + tiled;
    case K::Pbroadcast:
      return s + " source=" + std::to_string(p_.source);
  }
  return s;
}

bool LayoutCollective::uses_axis_name(const std::string& n) const {
  return std::find(p_.axes.begin(), p_.axes.end(), n) != p_.axes.end();
}

// Every layout collective is linear: the tangent takes the same collective (§4).
std::vector<Array> LayoutCollective::jvp(const std::vector<Array>&,
                                         const std::vector<Array>& tangents,
                                         std::vector<Array>&) const {
  return {bind1(shared_from_this(), {tangents[0]})};
}

// §4.10: all_gather <-> psum_scatter, ppermute <-> the inverse pairs, all_to_all with
// its axes swapped, the invariant gather -> this device's slice, pbroadcast -> the
// psum kept on the source. Over a vmap's axis_name nothing is typed invariant: every
// example's loss reads the gathered value, so its transpose sums (psum_scatter).
std::vector<Array> LayoutCollective::transpose(const std::vector<Array>& cts,
                                               const std::vector<LinearIn>& ins) const {
  const Array& ct = cts[0];
  Params q = p_;
  switch (p_.kind) {
    case K::AllGather:
      q.invariant = false;
      if (p_.invariant && vmap_axes_.empty()) {
        const Shape& b = ins[0].type.shape;
        int64_t part = p_.tiled ? b[p_.dim] : 1;
        std::vector<ArrayLike> start(ct.ndim(), ArrayLike(0));
        start[p_.dim] = axis_index(p_.axes) * static_cast<int32_t>(part);
        Shape sizes = ct.shape();
        sizes[p_.dim] = part;
        Array y = dynamic_slice(ct, start, sizes);
        return {p_.tiled ? y : squeeze(y, p_.dim)};
      }
      q.kind = K::ReduceScatter;
      break;
    case K::ReduceScatter:
      q.kind = K::AllGather;
      break;
    case K::Ppermute:
      for (auto& pr : q.perm) std::swap(pr.first, pr.second);
      break;
    case K::AllToAll:
      std::swap(q.dim, q.dim2);
      break;
    case K::Pbroadcast: {
      Array keep = equal(axis_index(p_.axes), static_cast<int32_t>(p_.source));
      Array s = psum(ct, p_.axes);
      return {where(keep, s, zeros_like(s))};
    }
  }
  return {bind1(std::make_shared<LayoutCollective>(q), {ct})};
}

// Over other axes the collective acts per element of the other dimensions: the batch
// dimension goes first and the collective's dimensions shift by one. Over the vmap's
// own axis_name (§6.2) the instances are the batch: each collective becomes the
// equivalent data movement along the batch dimension.
detail::Batched LayoutCollective::batch(const std::vector<Array>& args,
                                        const std::vector<int>& dims) const {
  const BatchAxis& b = batch_axis();
  if (b.name.empty() || !uses_axis_name(b.name)) {
    if (p_.kind == K::Ppermute || p_.kind == K::Pbroadcast)
      return {{bind1(shared_from_this(), args)}, {dims[0]}};
    Array x = dims[0] == 0 ? args[0] : moveaxis(args[0], dims[0], 0);
    Params q = p_;
    q.dim += 1;
    q.dim2 += 1;
    return {{bind1(std::make_shared<LayoutCollective>(q), {x})}, {0}};
  }
  const char* op = op_name(p_.kind);
  if (!p_.groups.empty()) refuse_vmap_groups(op, b.name, p_.groups);
  if (p_.axes.size() != 1)
    throw NotImplementedError(std::string("[") + op + "] " + op +
                              " over a vmap axis name together with other axes " +
                              axis_names_tuple(p_.axes) +
                              " is not implemented. Got that tuple; expected the vmap's axis "
                              "alone. Apply one collective per axis.");
  const int64_t n = b.size;
  // The operand with the instances at dimension 0 (an unbatched one is the same on all).
  Array x = batch_at_front(args[0], dims[0]);
  switch (p_.kind) {
    case K::AllGather: {  // every instance gets the stack: unbatched
      Array y = moveaxis(x, 0, p_.tiled ? p_.dim : p_.dim);
      if (p_.tiled) {
        Shape s = x.shape();
        s.erase(s.begin());
        s[static_cast<size_t>(p_.dim)] *= n;
        y = reshape(y, s);
      }
      return {{y}, {-1}};
    }
    case K::ReduceScatter: {  // the sum over instances, split along the scatter dim
      Array s = sum(x, 0).astype(x.dtype());
      if (!p_.tiled) return {{s}, {p_.dim}};
      Shape sh = s.shape();
      sh[static_cast<size_t>(p_.dim)] /= n;
      sh.insert(sh.begin() + p_.dim, n);
      return {{reshape(s, sh)}, {p_.dim}};
    }
    case K::Ppermute: {
      if (static_cast<int64_t>(p_.perm.size()) != n)
        throw NotImplementedError(
            "[ppermute] ppermute over a vmap axis needs a full permutation. Got perm=" +
            pairs_str(p_.perm) + " for an axis of size " + std::to_string(n) +
            "; expected one pair per instance (JAX asserts the same). Complete the permutation "
            "and mask the result.");
      if (dims[0] < 0) return {{args[0]}, {-1}};
      std::vector<int32_t> src(static_cast<size_t>(n));
      for (const auto& [a, d] : p_.perm) src[static_cast<size_t>(d)] = a;
      return {{take(x, array(src), 0)}, {0}};
    }
    case K::Pbroadcast: {
      if (dims[0] < 0) return {{args[0]}, {-1}};
      std::vector<int32_t> src(static_cast<size_t>(n), p_.source);
      return {{take(x, array(src), 0)}, {0}};
    }
    case K::AllToAll: {
      // Instance k gets, from each instance j, part k of j's split axis, stacked at
      // concat_axis: x[j, ..., k@split, ...] -> y[k, ..., j@concat, ...]. Tiled: the
      // split axis is first cut into (n, size / n), and j then merges into the concat
      // axis as its major part (instance j's chunk is block j of the concatenation).
      if (p_.tiled) {
        Shape sh = x.shape();
        const auto at = static_cast<size_t>(p_.dim) + 1;
        const int64_t part = sh[at] / n;
        sh[at] = part;
        sh.insert(sh.begin() + static_cast<long>(at), n);
        x = reshape(x, sh);  // [j, ..., k, part, ...]
      }
      Array z = moveaxis(x, p_.dim + 1, 0);  // [k, j, rest]
      Array y = moveaxis(z, 1, p_.dim2 + 1);
      if (!p_.tiled) return {{y}, {0}};
      Shape ys = y.shape();
      const auto c = static_cast<size_t>(p_.dim2) + 1;  // j, then the concat axis
      ys[c] *= ys[c + 1];
      ys.erase(ys.begin() + static_cast<long>(c) + 1);
      return {{reshape(y, ys)}, {0}};
    }
  }
  return {{args[0]}, {dims[0]}};
}

CollectiveRun collective_run(const LayoutCollective& c, const Shape& in, int64_t n) {
  const auto& p = c.p();
  CollectiveRun run;
  const size_t r = in.size();
  const auto d = static_cast<size_t>(p.dim);
  switch (p.kind) {
    case K::AllGather:  // received [n, block] -> the block's dims with n at `dim`
      run.count = prod(in, 0, r);
      run.post[0] = n;
      run.post[1] = prod(in, 0, d);
      run.post[2] = prod(in, d, r);
      break;
    case K::ReduceScatter:  // [outer, n, part] -> [n, outer, part]: rank k's part leads
      run.pre[0] = prod(in, 0, d);
      run.pre[1] = n;
      run.pre[2] = in[d] / n * prod(in, d + 1, r);
      run.count = run.pre[0] * run.pre[2];
      break;
    case K::AllToAll: {
      run.pre[0] = prod(in, 0, d);
      run.pre[1] = n;
      run.pre[2] = in[d] / n * prod(in, d + 1, r);
      run.count = run.pre[0] * run.pre[2];
      Shape chunk = in;  // what each rank receives from each sender, in concat indexing
      if (p.tiled)
        chunk[d] /= n;
      else
        chunk.erase(chunk.begin() + p.dim);
      const auto c2 = static_cast<size_t>(p.dim2);
      run.post[0] = n;
      run.post[1] = prod(chunk, 0, c2);
      run.post[2] = prod(chunk, c2, chunk.size());
      break;
    }
    case K::Ppermute:
    case K::Pbroadcast:
      run.count = prod(in, 0, r);
      break;
  }
  return run;
}

void swap_leading(const void* src, void* dst, const int64_t abc[3], size_t item) {
  const int64_t a = abc[0], b = abc[1];
  const size_t row = static_cast<size_t>(abc[2]) * item;
  const auto* s = static_cast<const char*>(src);
  auto* o = static_cast<char*>(dst);
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::memcpy(o + (static_cast<size_t>(j * a + i)) * row,
                  s + (static_cast<size_t>(i * b + j)) * row, row);
}

}  // namespace tsr::prim
