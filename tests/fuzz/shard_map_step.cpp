// The fuzzer's shard_map step: x (and sometimes a second input laid out like it)
// enters a shard_map over the context mesh with in_specs from its sharding; the body
// applies elementwise ops and collectives (psum/pmean/pmax/pmin, all_gather then
// psum_scatter / n, ppermute there and back) whose global meaning the oracle computes
// on one device from reshapes and slices. See README.md, "shard_map".
#include <algorithm>
#include <numeric>

#include "fuzz.h"

namespace fuzz {

using namespace tsr;

namespace {

using AL = ArrayLike;
using Bin = Array (*)(const AL&, const AL&);
/** Per dimension, the mesh axes the block varies over along it (major first). */
using Layout = std::vector<std::vector<std::string>>;

struct Unary {
  const char* name;
  Array (*f)(const Array&);
};
const Unary kUnary[] = {
    {"neg", [](const Array& b) { return neg(b); }},
    {"abs", [](const Array& b) { return abs(b); }},
    {"sin", [](const Array& b) { return sin(b); }},
    {"square", [](const Array& b) { return square(b); }},
    {"tanh", [](const Array& b) { return tanh(b); }},
    {"floor", [](const Array& b) { return floor(b); }},
    {"b * 3", [](const Array& b) { return AL(b) * AL(int64_t{3}); }},
    {"b - 0.5", [](const Array& b) { return AL(b) - AL(0.5); }},
};
struct Binary {
  const char* name;
  Bin f;
};
const Binary kBinary[] = {{"add", add}, {"multiply", multiply}, {"maximum", maximum}};

enum class Red { Sum, Mean, Max, Min };
const char* red_name(Red k) {
  static const char* n[] = {"psum", "pmean", "pmax", "pmin"};
  return n[static_cast<int>(k)];
}

/** One body step, with the layout of the block it applies to. */
struct BodyOp {
  enum class Kind { Unary, Reduce, GatherScatter, PermuteBack } kind = Kind::Unary;
  int unary = 0;
  Red red = Red::Sum;
  std::vector<std::string> axes;          // the named axes (collectives)
  int dim = 0;                            // GatherScatter: the gathered/scattered dim
  bool invariant = false;                 // GatherScatter: all_gather's .invariant
  std::vector<std::pair<int, int>> perm;  // PermuteBack: there (back: the inverse)
  Layout before;
};

int size_of(const MeshDef& m, const std::string& a) {
  return m
      .sizes[static_cast<size_t>(std::find(m.names.begin(), m.names.end(), a) - m.names.begin())];
}
int64_t size_of(const MeshDef& m, const std::vector<std::string>& axes) {
  int64_t n = 1;
  for (const auto& a : axes) n *= size_of(m, a);
  return n;
}
std::vector<std::string> varying(const Layout& l) {
  std::vector<std::string> v;
  for (const auto& d : l) v.insert(v.end(), d.begin(), d.end());
  return v;
}
PartitionSpec spec_of(const Layout& l) {
  std::vector<PartitionEntry> e;
  for (const auto& d : l) e.emplace_back(Axes(d.begin(), d.end()));
  return PartitionSpec(e);
}
std::string names(const std::vector<std::string>& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.size(); ++i) s += (i ? "," : "") + a[i];
  return s + ")";
}

/** The oracle of psum & co over `axes` of a value laid out as `l`: each dimension is
 *  split into (its axes' sizes..., block); the slices of the named axes' dims are
 *  combined one by one in group-rank order (row-major over `axes`, as the comm groups
 *  reduce), in the collective's dtype and weak type. A named axis the value does not
 *  vary over holds copies: its slices repeat. */
Array reduce_oracle(const Array& x, const Layout& l, const std::vector<std::string>& axes, Red k,
                    const MeshDef& m) {
  Array y = x.dtype() == bool_ ? astype(x, int32) : x;
  Shape split, out;
  std::vector<int> pos(axes.size(), -1);  // split dim of each named axis, -1: copies
  for (size_t d = 0; d < l.size(); ++d) {
    int64_t parts = 1, keep = 1;
    for (const auto& a : l[d]) {
      auto it = std::find(axes.begin(), axes.end(), a);
      if (it != axes.end())
        pos[static_cast<size_t>(it - axes.begin())] = static_cast<int>(split.size());
      else
        keep *= size_of(m, a);
      split.push_back(size_of(m, a));
      parts *= size_of(m, a);
    }
    int64_t block = y.shape()[d] / parts;
    split.push_back(block);
    out.push_back(keep * block);
  }
  y = reshape(y, split);
  Bin f = k == Red::Max ? Bin(maximum) : k == Red::Min ? Bin(minimum) : Bin(add);
  Array acc;
  int64_t n = size_of(m, axes);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<Index> idx(split.size(), Index(Slice{}));
    int64_t rest = r;
    for (size_t j = axes.size(); j-- > 0;) {
      int sz = size_of(m, axes[j]);
      if (pos[j] >= 0) idx[static_cast<size_t>(pos[j])] = Index(rest % sz);
      rest /= sz;
    }
    Array part = index(y, idx);
    acc = acc.valid() ? f(acc, part) : part;
  }
  acc = reshape(acc, out);
  if (k == Red::Mean) {
    double nd = static_cast<double>(n);
    acc = is_floating(acc.dtype()) ? AL(acc) / AL(nd) : AL(astype(acc, float32)) / AL(nd);
  }
  return acc;
}

/** The oracle of out_specs naming axes the block does not vary over (§3.7's tiling):
 *  along dim d, each block of layout `l` is repeated for the axes `extra[d]` (minor). */
Array tile_oracle(const Array& x, const Layout& l, const Layout& extra, const MeshDef& m) {
  Array y = x;
  for (size_t d = 0; d < l.size(); ++d) {
    int64_t reps = size_of(m, extra[d]);
    if (reps == 1) continue;
    Shape s = y.shape(), split, wide;
    int64_t parts = size_of(m, l[d]);
    for (size_t k = 0; k < s.size(); ++k) {
      if (k != d) {
        split.push_back(s[k]);
        wide.push_back(s[k]);
        continue;
      }
      split.insert(split.end(), {parts, 1, s[k] / parts});
      wide.insert(wide.end(), {parts, reps, s[k] / parts});
    }
    Shape out = s;
    out[d] *= reps;
    y = reshape(broadcast_to(reshape(y, split), wide), out);
  }
  return y;
}

Array as_float(const Array& b) { return is_floating(b.dtype()) ? b : astype(b, float32); }

/** The body step on a block (sharded) or its global meaning (oracle). */
Array apply(const BodyOp& op, const Array& b, bool oracle, const MeshDef& m) {
  switch (op.kind) {
    case BodyOp::Kind::Unary:
      return kUnary[op.unary].f(b);
    case BodyOp::Kind::Reduce:
      if (oracle) return reduce_oracle(b, op.before, op.axes, op.red, m);
      switch (op.red) {
        case Red::Sum:
          return psum(b, op.axes);
        case Red::Mean:
          return pmean(b, op.axes);
        case Red::Max:
          return pmax(b, op.axes);
        default:
          return pmin(b, op.axes);
      }
    case BodyOp::Kind::GatherScatter: {
      // n copies of the gathered block summed, then scattered: n times the block.
      int64_t n = size_of(m, op.axes);
      Array f = as_float(b);
      if (oracle) {  // the n copies summed in rank order, as the comm group does
        Array acc = f;
        for (int64_t i = 1; i < n; ++i) acc = add(acc, f);
        return AL(acc) / AL(n);
      }
      Array g = all_gather(f, op.axes, {.axis = op.dim, .tiled = true, .invariant = op.invariant});
      Array s = psum_scatter(g, op.axes, {.scatter_dimension = op.dim, .tiled = true});
      return AL(s) / AL(n);
    }
    default: {
      if (oracle) return b;
      std::vector<std::pair<int, int>> back;
      for (auto [s, d] : op.perm) back.emplace_back(d, s);
      return ppermute(ppermute(b, op.axes, op.perm), op.axes, back);
    }
  }
}

/** 1 or 2 axes for a collective: mostly ones the block varies over (only those when
 *  `only_varying`; none when it varies over none). */
std::vector<std::string> draw_axes(Gen& g, const std::vector<std::string>& v, bool many,
                                   bool only_varying = false) {
  const MeshDef& m = g.mesh();
  std::vector<std::string> out;
  if (!v.empty() && (only_varying || g.r.coin(0.85))) {
    for (const auto& a : v)
      if (many ? g.r.coin(0.6) : out.empty() && g.r.coin(0.5)) out.push_back(a);
    if (out.empty()) out.push_back(g.r.pick(v));
  }
  if (only_varying) return out;
  if (out.empty() || (many && g.r.coin(0.2))) {
    const std::string& a = g.r.pick(m.names);
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

}  // namespace

Step d_shard_map(Gen& g) {
  const MeshDef& m = g.mesh();
  int rank = g.rank();
  // x's layout, from the shadow run's spec (unreduced/reduced sets dropped by a
  // reshard before the call: shard_map takes plain specs).
  Layout l(static_cast<size_t>(rank));
  bool strip = false;
  if (g.xspec) {
    const auto& xe = g.xspec->entries();
    for (size_t d = 0; d < l.size() && d < xe.size(); ++d) l[d] = xe[d].axes();
    strip = !g.xspec->unreduced().empty() || !g.xspec->reduced().empty();
  }
  const PartitionSpec in_spec = spec_of(l);
  // in_specs read from the arguments' types, when the drawn layout is surely theirs:
  // the shadow ran, and not inside a composite (vmap's body layout is a guess). A wrong
  // guess given explicitly is a loud in_specs error, never a silently other oracle.
  const bool infer = g.xspec && g.depth == 0 && g.r.coin(0.3);
  std::string text = "shard_map[in_specs=" + (infer ? std::string("inferred") : str(in_spec));

  // Sometimes a second argument with x's shape and layout, combined elementwise first.
  int second = -1, bin = 0;
  std::string body;
  if (g.r.coin(0.3)) {
    second = g.input(g.xs(), g.r.coin(0.7) ? g.dt() : g.dtype());
    g.c.inputs[static_cast<size_t>(second)].spec = in_spec;
    bin = g.r.below(3);
    body = std::string("b = ") + kBinary[bin].name + "(b, b" + std::to_string(second) + "); ";
  }
  std::vector<BodyOp> ops;
  std::vector<std::string> inner;
  // Axes the block's type varies over although every device along them holds the same
  // data: a ppermute or psum_scatter over an axis it did not vary over (auto pvary).
  std::vector<std::string> copies;
  auto has = [](const std::vector<std::string>& v, const std::string& a) {
    return std::find(v.begin(), v.end(), a) != v.end();
  };
  auto typed_vma = [&] {
    std::vector<std::string> v = varying(l);
    for (const auto& a : copies)
      if (!has(v, a)) v.push_back(a);
    return v;
  };
  // After a collective that leaves its axes varying: those it did not vary over hold copies.
  auto now_varying = [&](const std::vector<std::string>& axes) {
    for (const auto& a : axes)
      if (!has(typed_vma(), a)) copies.push_back(a);
  };
  int n = g.r.range(1, 3);
  for (int i = 0; i < n; ++i) {
    BodyOp op;
    op.before = l;
    int kind = g.r.below(100);
    // A scalar block cannot be tiled into the output (§3.7): its collectives name only
    // axes it varies over, and psum & co. when there are none.
    std::vector<std::string> vma = typed_vma();
    if (kind >= 60 && rank == 0 && vma.empty()) kind = 30;
    if (kind < 25) {
      op.unary = g.r.below(static_cast<int>(std::size(kUnary)));
      body += std::string("b = ") + kUnary[op.unary].name + "; ";
      inner.push_back(kUnary[op.unary].name);
    } else if (kind < 60) {
      op.kind = BodyOp::Kind::Reduce;
      int r = g.r.below(10);
      op.red = r < 5 ? Red::Sum : r < 7 ? Red::Mean : r < 9 ? Red::Max : Red::Min;
      op.axes = draw_axes(g, vma, true);
      auto named = [&](const std::string& a) { return has(op.axes, a); };
      for (auto& d : l)  // the reduced axes are invariant from here on
        d.erase(std::remove_if(d.begin(), d.end(), named), d.end());
      copies.erase(std::remove_if(copies.begin(), copies.end(), named), copies.end());
      g.c.reorders = true;  // sums round by order; max/min of -0 and +0 too
      body += std::string("b = ") + red_name(op.red) + "(b, " + names(op.axes) + "); ";
      inner.push_back(red_name(op.red));
    } else if (kind < 78 && rank > 0) {
      op.kind = BodyOp::Kind::GatherScatter;
      op.axes = draw_axes(g, vma, g.r.coin(0.2));
      op.dim = g.r.below(rank);
      op.invariant = g.r.coin(0.3);
      now_varying(op.axes);
      g.c.reorders = true;
      body += "b = psum_scatter(all_gather(b, " + names(op.axes) + ", dim " +
              std::to_string(op.dim) + (op.invariant ? ", invariant" : "") + "), tiled) / " +
              std::to_string(size_of(m, op.axes)) + "; ";
      inner.push_back("all_gather+psum_scatter");
    } else {
      op.kind = BodyOp::Kind::PermuteBack;
      op.axes = draw_axes(g, vma, g.r.coin(0.2), rank == 0);
      now_varying(op.axes);
      int k = static_cast<int>(size_of(m, op.axes));
      std::vector<int> p(static_cast<size_t>(k));
      std::iota(p.begin(), p.end(), 0);
      for (int j = k - 1; j > 0; --j) std::swap(p[static_cast<size_t>(j)], p[g.r.below(j + 1)]);
      std::string ps;
      for (int j = 0; j < k; ++j) {
        op.perm.emplace_back(j, p[static_cast<size_t>(j)]);
        ps += (j ? "," : "") + std::to_string(j) + "->" + std::to_string(p[static_cast<size_t>(j)]);
      }
      body += "b = ppermute(ppermute(b, " + names(op.axes) + ", [" + ps + "]), back); ";
      inner.push_back("ppermute^2");
    }
    ops.push_back(std::move(op));
  }
  // out_specs: the block's layout, plus the axes it holds copies over (which the type
  // says vary, so out_specs must name them) and sometimes an invariant axis: each
  // tiles the output along a drawn dimension.
  Layout tiled(l.size());
  for (const auto& a : m.names)
    if (!has(varying(l), a) && rank > 0 && (has(copies, a) || g.r.coin(0.15)))
      tiled[static_cast<size_t>(g.r.below(rank))].push_back(a);
  Layout lout = l;
  for (size_t d = 0; d < l.size(); ++d)
    lout[d].insert(lout[d].end(), tiled[d].begin(), tiled[d].end());
  const PartitionSpec out_spec = spec_of(lout);
  text += " out_specs=" + str(out_spec) + "]{" + body + "}(x" +
          (second >= 0 ? ", in" + std::to_string(second) : "") + ")";

  Step s{"", text,
         [=](const Ctx& c, const Array& x, const Ins& in) -> Array {
           std::vector<Array> args{x};
           if (second >= 0) args.push_back(in[static_cast<size_t>(second)]);
           auto run = [=](const std::vector<Array>& a, bool oracle) {
             Array b = a[0];
             if (a.size() > 1) b = kBinary[bin].f(b, a[1]);
             for (const auto& op : ops) b = apply(op, b, oracle, m);
             return b;
           };
           if (c.oracle) return tile_oracle(run(args, true), l, tiled, m);
           if (strip) args[0] = reshard(args[0], in_spec);
           ShardMapOptions o;
           if (!infer) o.in_specs = std::optional<PartitionSpec>(in_spec);
           o.out_specs = out_spec;
           return shard_map([run](const std::vector<Array>& a) { return run(a, false); }, o)(args);
         },
         inner};
  return s;
}

}  // namespace fuzz
