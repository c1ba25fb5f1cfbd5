// The fuzzer's shard_map-on-Auto-meshes step (README.md, "shard_map on Auto meshes"):
// x moves onto the context mesh's devices with all axes Auto, or some Auto and some
// Explicit, and enters a shard_map there directly, under jit, under grad or under
// vmap, sometimes with a host (mesh-less) second argument; the result comes back to
// the context mesh. The oracle computes the same on one device from slices.
#include <algorithm>

#include "fuzz.h"
#include "tsr/core/array_impl.h"

namespace fuzz {

using namespace tsr;

namespace {

using AL = ArrayLike;
/** Per dimension, the mesh axes a block is split along (major first). */
using Layout = std::vector<std::vector<std::string>>;

struct Unary {
  const char* name;
  Array (*f)(const Array&);
};
const Unary kOps[] = {
    {"neg", [](const Array& b) { return neg(b); }},
    {"sin", [](const Array& b) { return sin(b); }},
    {"square", [](const Array& b) { return square(b); }},
    {"tanh", [](const Array& b) { return tanh(b); }},
    {"b * 3", [](const Array& b) { return AL(b) * AL(int64_t{3}); }},
};

enum class How { Plain, Jit, Grad, Vmap };
const char* how_name(How h) {
  static const char* n[] = {"", "jit", "grad", "vmap"};
  return n[static_cast<int>(h)];
}

/** One body step: a unary op, or a psum over axes the block varies over. */
struct Op {
  int unary = -1;                 // >= 0: kOps[unary]
  std::vector<std::string> axes;  // psum's
  Layout before;                  // the block's layout before the step (example dims)
};

int size_of(const MeshDef& m, const std::string& a) {
  return m
      .sizes[static_cast<size_t>(std::find(m.names.begin(), m.names.end(), a) - m.names.begin())];
}

PartitionSpec spec_of(const Layout& l, int lead = 0) {
  std::vector<PartitionEntry> e(static_cast<size_t>(lead));
  for (const auto& d : l) e.emplace_back(Axes(d.begin(), d.end()));
  return PartitionSpec(e);
}

/** psum over `axes` of blocks laid out as `l` (dims from `lead` on), globally: each
 *  dim split into (its axes' sizes..., block); the slices along the named axes added
 *  in group-rank order (row-major over `axes`, as the comm groups reduce). */
Array psum_oracle(const Array& x, const Layout& l, const std::vector<std::string>& axes,
                  const MeshDef& m, int lead) {
  Shape split, out;
  std::vector<int> pos(axes.size(), -1);
  for (int d = 0; d < lead; ++d) {
    split.push_back(x.shape()[static_cast<size_t>(d)]);
    out.push_back(x.shape()[static_cast<size_t>(d)]);
  }
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
    int64_t block = x.shape()[d + static_cast<size_t>(lead)] / parts;
    split.push_back(block);
    out.push_back(keep * block);
  }
  // psum of bools counts them (int32), as the collective does.
  Array y = reshape(x.dtype() == bool_ ? astype(x, int32) : x, split), acc;
  int64_t n = 1;
  for (const auto& a : axes) n *= size_of(m, a);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<Index> idx(split.size(), Index(Slice{}));
    int64_t rest = r;
    for (size_t j = axes.size(); j-- > 0;) {
      int sz = size_of(m, axes[j]);
      idx[static_cast<size_t>(pos[j])] = Index(rest % sz);
      rest /= sz;
    }
    Array part = index(y, idx);
    acc = acc.valid() ? add(acc, part) : part;
  }
  return reshape(acc, out);
}

/** The body on a block (oracle: on the whole value, example dims from `lead` on). */
Array body(const std::vector<Op>& ops, int bin, Array b, const Array& h, bool oracle,
           const MeshDef& m, int lead) {
  if (h.valid()) b = bin == 0 ? add(b, h) : multiply(b, h);
  for (const auto& op : ops) {
    if (op.unary >= 0)
      b = kOps[op.unary].f(b);
    else
      b = oracle ? psum_oracle(b, op.before, op.axes, m, lead) : psum(b, op.axes);
  }
  return b;
}

/** Whether a is a concrete array (not a value of a trace): its layout can be read. */
bool concrete(const Array& a) { return a.valid() && !a.impl()->var; }

}  // namespace

Step d_auto_shard_map(Gen& g) {
  const MeshDef& m = g.mesh();
  const int rank = g.rank();
  const bool is_float = is_floating(g.dt());
  // How the shard_map is called.
  std::vector<How> hows = {How::Plain, How::Jit};
  if (is_float) hows.push_back(How::Grad);
  if (rank >= 1 && g.xs()[0] > 0) hows.push_back(How::Vmap);
  const How how = g.r.pick(hows);
  const int lead = how == How::Vmap ? 1 : 0;  // the vmapped dim, unsplit
  // Axis types: all Auto, or (meshes with several axes) some Explicit.
  std::vector<AxisType> types(m.sizes.size(), AxisType::Auto);
  if (m.sizes.size() > 1 && g.r.coin(0.4)) {
    for (auto& t : types) t = g.r.coin(0.5) ? AxisType::Explicit : AxisType::Auto;
    types[static_cast<size_t>(g.r.below(static_cast<int>(types.size())))] = AxisType::Auto;
  }
  // The example's layout: each axis at most once, only where it divides.
  Layout l(static_cast<size_t>(rank - lead));
  {
    std::vector<std::string> free = m.names;
    for (size_t d = 0; d < l.size(); ++d) {
      int64_t n = g.xs()[d + static_cast<size_t>(lead)], k = 1;
      for (size_t t = 0; t < 2 && !free.empty() && g.r.coin(t ? 0.15 : 0.6); ++t) {
        const std::string a = g.r.pick(free);
        if (n % (k * size_of(m, a)) != 0) break;
        k *= size_of(m, a);
        l[d].push_back(a);
        free.erase(std::find(free.begin(), free.end(), a));
      }
    }
  }
  const PartitionSpec in_spec = spec_of(l);
  // A host (mesh-less) second operand of x's shape, combined first: a traced argument of
  // the jit that calls the shard_map (jit and grad), which places it itself. (Passed
  // concrete inside a trace, shard_map would place it eagerly on the Auto mesh: a
  // constant on another mesh than the one a jit around the step runs under.)
  Array host;
  int bin = g.r.below(2);
  if ((how == How::Jit || how == How::Grad) && g.r.coin(0.5)) {
    Shape s(g.xs().begin() + lead, g.xs().end());
    std::vector<double> v(static_cast<size_t>(numel(s)));
    for (auto& e : v) e = g.r.range(-8, 8) / 4.0;
    MeshScope none{Mesh()};
    host = array<double>(v, s).astype(is_float ? g.dt() : float32);
  }
  // The body: 1-2 unary ops and psums over axes the block varies over.
  std::vector<Op> ops;
  std::string text;
  if (host.valid()) text += std::string("b = ") + (bin == 0 ? "add" : "multiply") + "(b, host); ";
  Layout cur = l;
  for (int i = 0, n = g.r.range(1, 2); i < n; ++i) {
    Op op;
    op.before = cur;
    std::vector<std::string> vary;
    for (const auto& d : cur) vary.insert(vary.end(), d.begin(), d.end());
    if (vary.empty() || g.r.coin(0.5)) {
      op.unary = g.r.below(static_cast<int>(std::size(kOps)));
      text += std::string("b = ") + kOps[op.unary].name + "; ";
    } else {
      for (const auto& a : vary)
        if (g.r.coin(0.6)) op.axes.push_back(a);
      if (op.axes.empty()) op.axes.push_back(g.r.pick(vary));
      for (auto& d : cur)
        d.erase(std::remove_if(d.begin(), d.end(),
                               [&](const std::string& a) {
                                 return std::find(op.axes.begin(), op.axes.end(), a) !=
                                        op.axes.end();
                               }),
                d.end());
      std::string names;
      for (const auto& a : op.axes) names += (names.empty() ? "" : ",") + a;
      text += "b = psum(b, (" + names + ")); ";
      g.c.reorders = true;
    }
    ops.push_back(op);
  }
  const PartitionSpec out_spec = spec_of(cur);
  if (how == How::Grad) g.c.reorders = true;
  std::string mesh_kind;
  for (size_t a = 0; a < types.size(); ++a)
    mesh_kind += (a ? "," : "") + m.names[a] + (types[a] == AxisType::Auto ? ":A" : ":E");
  std::string step = std::string(how_name(how)) + (how == How::Plain ? "" : "(") +
                     "shard_map[mesh=(" + mesh_kind + ") in_specs=" + in_spec.repr() +
                     " out_specs=" + out_spec.repr() + "]{" + text + "}" +
                     (how == How::Plain ? "" : ")") + "(x" + (host.valid() ? ", host" : "") + ")";

  // Strict when the oracle runs the step on x and the step is not inside a composite
  // (whose transform may refuse the step around it alike, e.g. vmap of a placement).
  bool strict = g.depth == 0;
  if (strict) try {
      auto f = [&](const Array& a) { return body(ops, bin, a, host, true, m, lead); };
      if (how == How::Grad)
        (void)grad([&](const Array& a) { return sum(f(a)); })(g.x);
      else
        (void)f(g.x);
    } catch (const std::exception&) {
      strict = false;
    }
  Step s{
      "",
      step,
      [=](const Ctx& c, const Array& x, const Ins&) -> Array {
        if (c.oracle) {
          auto f = [&](const Array& a) { return body(ops, bin, a, host, true, m, lead); };
          if (how == How::Grad) return grad([&](const Array& a) { return sum(f(a)); })(x);
          return f(x);
        }
        const Mesh ctx = get_mesh();
        const Mesh am(ctx.devices(), ctx.axis_sizes(), ctx.axis_names(), types);
        Array r;
        {
          MeshScope scope(am);
          Array xa = device_put(x, NamedSharding(am, spec_of(l, lead)));
          auto sm = shard_map(
              [=](const std::vector<Array>& a) {
                return body(ops, bin, a[0], a.size() > 1 ? a[1] : Array(), false, m, 0);
              },
              {.in_specs = {in_spec}, .out_specs = out_spec});
          auto call = [sm](const Array& a, const std::vector<Array>& k) {
            std::vector<Array> args{a};
            args.insert(args.end(), k.begin(), k.end());
            return sm(args);
          };
          std::vector<Array> k;
          if (host.valid()) k.push_back(host);
          PartitionSpec want = spec_of(cur, lead);
          try {
            switch (how) {
              case How::Plain:
                r = call(xa, k);
                break;
              case How::Jit:
                r = jit(call)(xa, k);
                break;
              case How::Grad: {
                auto loss = [call](const Array& a, const std::vector<Array>& h) {
                  return sum(call(a, h));
                };
                r = jit(grad(loss))(xa, k);
                want = spec_of(l);
                break;
              }
              default:
                r = vmap(call, {.in_axes = {0, none}})(xa, k);
            }
          } catch (const Error& err) {
            // A valid program (the oracle ran it): a refusal is a bug, not a typed
            // error eager and jit could agree on.
            if (strict)
              throw std::logic_error(std::string("shard_map on Auto axes refused: ") + err.what());
            throw;
          }
          // Item 3 of issue 23: the result keeps the out_specs layout (the input
          // cotangent: the in_specs one), where it can be read.
          if (how != How::Jit && concrete(r) &&
              !(r.sharding().spec().normalized(r.ndim()) == want.normalized(r.ndim())))
            throw std::logic_error("shard_map on Auto axes: result laid out " +
                                   r.sharding().spec().repr() + ", expected " + want.repr());
        }
        return device_put(r, NamedSharding(ctx, P()));
      },
      {}};
  return s;
}

}  // namespace fuzz
