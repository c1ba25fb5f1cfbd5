// The `vmap_collective_ad` step (README.md, issue 23 item 1): the derivative of
// per-example losses that read a collective over the vmap's axis_name (psum, pmean,
// all_gather, psum_scatter, ppermute, all_to_all, pbroadcast), taken inside the vmap
// (grad or vjp per example) or outside it (vjp of the vmap). The oracle writes the
// collective out as a loop over the examples and differentiates that on one device:
// outside shard_map a vmap's axis is untyped, so each example's cotangent is that of
// the sum of all the examples' losses.
#include <algorithm>
#include <numeric>

#include "fuzz.h"

namespace fuzz {

using namespace tsr;

namespace {

enum Coll { Psum, Pmean, AllGather, PsumScatter, Ppermute, AllToAll, Pbroadcast };
const char* const kCollName[] = {"psum",     "pmean",      "all_gather", "psum_scatter",
                                 "ppermute", "all_to_all", "pbroadcast"};

/** A collective over the vmap's axis "v" of B examples of per-example shape s. */
struct VColl {
  Coll kind = Psum;
  int64_t n = 1;  // the number of examples (the axis size)
  int dim = 0, dim2 = 0;
  bool tiled = false;
  std::vector<std::pair<int, int>> perm;  // ppermute: a full permutation
  int source = 0;                         // pbroadcast

  /** Under vmap: one example's result. */
  Array apply(const Array& v) const {
    switch (kind) {
      case Psum:
        return psum(v, "v");
      case Pmean:
        return pmean(v, "v");
      case AllGather:
        return all_gather(v, "v", {.axis = dim, .tiled = tiled});
      case PsumScatter:
        return psum_scatter(v, "v", {.scatter_dimension = dim, .tiled = tiled});
      case Ppermute:
        return ppermute(v, "v", perm);
      case AllToAll:
        return all_to_all(v, "v", dim, dim2, tiled);
      case Pbroadcast:
        return pbroadcast(v, "v", source);
    }
    return v;
  }

  /** The examples' results stacked at 0, each written out from the examples of xs. */
  Array loop(const Array& xs) const {
    std::vector<Array> ex;
    for (int64_t j = 0; j < n; ++j) ex.push_back(tsr::index(xs, {j}));
    auto part = [](const Array& a, int d, int64_t k, int64_t size) {  // [k*size, (k+1)*size)
      Shape lo(static_cast<size_t>(a.ndim()), 0), hi = a.shape();
      lo[static_cast<size_t>(d)] = k * size;
      hi[static_cast<size_t>(d)] = (k + 1) * size;
      return slice(a, lo, hi);
    };
    Array total = ex[0];
    for (int64_t j = 1; j < n; ++j) total = total + ex[static_cast<size_t>(j)];
    std::vector<Array> outs;
    for (int64_t k = 0; k < n; ++k) {
      switch (kind) {
        case Psum:
          outs.push_back(total);
          break;
        case Pmean:
          outs.push_back(total / static_cast<double>(n));
          break;
        case AllGather:
          outs.push_back(tiled ? concatenate(ex, dim) : stack(ex, dim));
          break;
        case PsumScatter: {
          int64_t size = tiled ? total.shape()[static_cast<size_t>(dim)] / n : 1;
          Array p = part(total, dim, k, size);
          outs.push_back(tiled ? p : squeeze(p, dim));
          break;
        }
        case Ppermute: {
          int src = 0;
          for (const auto& [a, b] : perm)
            if (b == k) src = a;
          outs.push_back(ex[static_cast<size_t>(src)]);
          break;
        }
        case AllToAll: {
          std::vector<Array> parts;
          int64_t size = tiled ? ex[0].shape()[static_cast<size_t>(dim)] / n : 1;
          for (const auto& e : ex) {
            Array p = part(e, dim, k, size);
            parts.push_back(tiled ? p : squeeze(p, dim));
          }
          outs.push_back(tiled ? concatenate(parts, dim2) : stack(parts, dim2));
          break;
        }
        case Pbroadcast:
          outs.push_back(ex[static_cast<size_t>(source)]);
          break;
      }
    }
    return stack(outs, 0);
  }

  std::string text() const {
    std::string s = std::string(kCollName[kind]) + "(v, 'v'";
    switch (kind) {
      case AllGather:
        s += ", axis=" + std::to_string(dim) + (tiled ? ", tiled" : "");
        break;
      case PsumScatter:
        s += ", scatter_dimension=" + std::to_string(dim) + (tiled ? ", tiled" : "");
        break;
      case AllToAll:
        s += ", " + std::to_string(dim) + ", " + std::to_string(dim2) + (tiled ? ", tiled" : "");
        break;
      case Ppermute: {
        s += ", [";
        for (size_t i = 0; i < perm.size(); ++i)
          s += (i ? ", (" : "(") + std::to_string(perm[i].first) + ", " +
               std::to_string(perm[i].second) + ")";
        s += "]";
        break;
      }
      case Pbroadcast:
        s += ", source=" + std::to_string(source);
        break;
      default:
        break;
    }
    return s + ")";
  }
};

/** A collective that fits per-example shape s and n examples; its result shape in `out`. */
VColl draw_coll(Gen& g, int64_t n, const Shape& s, Shape& out) {
  const int r = static_cast<int>(s.size());
  std::vector<int> exact, divisible;  // dims of size n / of a multiple of n (not 0)
  for (int d = 0; d < r; ++d) {
    if (s[static_cast<size_t>(d)] == n) exact.push_back(d);
    if (s[static_cast<size_t>(d)] > 0 && s[static_cast<size_t>(d)] % n == 0) divisible.push_back(d);
  }
  // pmean divides by n: exact only for a power of two (else the loop and the vmap
  // round differently, and a later log tells a tiny negative from a zero).
  std::vector<Coll> fits = {Psum, AllGather, Ppermute, Pbroadcast};
  if ((n & (n - 1)) == 0) fits.push_back(Pmean);
  if (!divisible.empty()) fits.insert(fits.end(), {PsumScatter, AllToAll, PsumScatter, AllToAll});
  VColl c;
  c.n = n;
  c.kind = g.r.pick(fits);
  out = s;
  switch (c.kind) {
    case AllGather:
      c.tiled = r > 0 && g.r.coin(0.4);
      c.dim = g.r.range(0, c.tiled ? r - 1 : r);
      if (c.tiled)
        out[static_cast<size_t>(c.dim)] *= n;
      else
        out.insert(out.begin() + c.dim, n);
      break;
    case PsumScatter:
    case AllToAll:
      c.tiled = exact.empty() || g.r.coin(0.4);
      c.dim = g.r.pick(c.tiled ? divisible : exact);
      if (c.kind == PsumScatter) {
        if (c.tiled)
          out[static_cast<size_t>(c.dim)] /= n;
        else
          out.erase(out.begin() + c.dim);
        break;
      }
      c.dim2 = g.r.below(r);
      if (c.tiled) {
        out[static_cast<size_t>(c.dim)] /= n;
        out[static_cast<size_t>(c.dim2)] *= n;
      } else {
        out.erase(out.begin() + c.dim);
        out.insert(out.begin() + c.dim2, n);
      }
      break;
    case Ppermute: {
      std::vector<int> dst(static_cast<size_t>(n));
      std::iota(dst.begin(), dst.end(), 0);
      for (size_t i = dst.size(); i > 1; --i)
        std::swap(dst[i - 1], dst[static_cast<size_t>(g.r.below(static_cast<int>(i)))]);
      for (int i = 0; i < n; ++i) c.perm.emplace_back(i, dst[static_cast<size_t>(i)]);
      break;
    }
    case Pbroadcast:
      c.source = g.r.below(static_cast<int>(n));
      break;
    default:
      break;
  }
  return c;
}

enum Api { GradInside, VjpInside, VjpOutside };
enum Wrap { NoJit, JitOutside, JitInside };

// The losses' nonlinearity: none or a square (of quarters: exact in any summation
// order, so later steps see the oracle's values; sin would round differently).
Array smooth(int h, const Array& a) { return h == 0 ? a : a * a; }

}  // namespace

Step d_vmap_collective_ad(Gen& g) {
  // The examples: x when it is a (strongly typed) float array with 1..16 of them, else
  // a new input. (Weak types of cotangents are the transposes' business, JAX's differ.)
  const bool use_x = is_floating(g.dt()) && !typeof(g.x).weak && g.rank() >= 1 && g.xs()[0] >= 1 &&
                     g.xs()[0] <= 16;
  int xin = -1;
  Shape xs = g.xs();
  DType dt = g.dt();
  std::optional<PartitionEntry> batch_entry;
  if (!use_x) {
    int64_t n = g.r.range(1, 4);
    Shape s = g.shape(0, 2);
    if (g.r.coin(0.5) && !s.empty())
      s[static_cast<size_t>(g.r.below(static_cast<int>(s.size())))] = n;
    s.insert(s.begin(), n);
    dt = g.float_dtype();
    xin = g.input(s, dt);
    xs = s;
    const auto& sp = g.c.inputs[static_cast<size_t>(xin)].spec;
    if (sp && !sp->entries().empty()) batch_entry = sp->entries()[0];
  } else if (g.xspec && !g.xspec->entries().empty()) {
    batch_entry = g.xspec->entries()[0];
  }
  const int64_t n = xs[0];
  Shape per(xs.begin() + 1, xs.end()), out;
  VColl c = draw_coll(g, n, per, out);
  out.insert(out.begin(), n);
  // The cotangents (the losses' weights): laid out like the examples along the batch,
  // since vmap wants one layout of the mapped dimension; resharded to the results' layout
  // before vjp takes them.
  int w = g.input(out, dt, false);
  if (batch_entry) {
    std::vector<PartitionEntry> e(1, *batch_entry);
    g.c.inputs[static_cast<size_t>(w)].spec = PartitionSpec(e);
  }
  const int h = g.r.below(2);
  const auto api = static_cast<Api>(g.r.below(3));
  const auto wrap = static_cast<Wrap>(api == VjpOutside ? g.r.below(2) : g.r.below(3));
  static const char* const hname[] = {"", "square"};
  const std::string body = std::string(hname[h]) + (h ? "(" : "") + c.text() + (h ? ")" : "");
  const std::string xname = use_x ? "x" : "in" + std::to_string(xin);
  const std::string wname = "in" + std::to_string(w);
  std::string text;
  switch (api) {
    case GradInside:
      text = "vmap(grad(v -> sum(w * " + body + ")), axis_name='v')(" + xname + ", " + wname + ")";
      break;
    case VjpInside:
      text = "vmap(vjp(v -> " + body + ")(w), axis_name='v')(" + xname + ", " + wname + ")";
      break;
    case VjpOutside:
      text = "vjp(vmap(v -> " + body + ", axis_name='v'))(" + xname + ")(" + wname + ")";
      break;
  }
  if (wrap == JitOutside) text = "jit(" + text + ")";
  if (wrap == JitInside) text += " [per-example fn jitted]";
  Step st;
  st.text = text;
  st.inner = {kCollName[c.kind]};
  auto step = [=](const Ctx& ctx, const Array& x, const Ins& in) -> Array {
    // Infinities and NaNs zeroed: the loop and the vmap group the same terms otherwise
    // (inf * (a + b) against inf * a + inf * b), which may make inf or NaN.
    auto finite = [](const Array& a) { return where(isfinite(a), a, 0.0); };
    const Array xv = finite(use_x ? x : in[static_cast<size_t>(xin)]);
    const Array wv = finite(in[static_cast<size_t>(w)]);
    if (ctx.oracle) {  // the loop over the examples, differentiated on one device
      auto [y, f] = tsr::vjp([&](const Array& a) { return smooth(h, c.loop(a)); }, xv);
      return std::get<0>(f(wv));
    }
    auto one = [c, h](const Array& v) { return smooth(h, c.apply(v)); };
    std::function<Array(const Array&, const Array&)> run;
    if (api == VjpOutside) {
      run = [one](const Array& a, const Array& ct) {
        auto vm = vmap(one, {.axis_name = "v"});
        auto [y, f] = tsr::vjp([&](const Array& b) { return vm(b); }, a);
        return std::get<0>(f(reshard(ct, typeof(y).sharding)));
      };
    } else {
      std::function<Array(const Array&, const Array&)> per_ex;
      if (api == GradInside)
        per_ex = [one](const Array& v, const Array& wk) {
          return grad([&](const Array& u) { return sum(wk * one(u)); })(v);
        };
      else
        per_ex = [one](const Array& v, const Array& wk) {
          auto [y, f] = tsr::vjp(one, v);
          return std::get<0>(f(reshard(wk, typeof(y).sharding)));  // vjp wants y's layout
        };
      run = [per_ex, wrap](const Array& a, const Array& ct) {
        if (wrap == JitInside) return vmap(jit(per_ex), {.axis_name = "v"})(a, ct);
        return vmap(per_ex, {.axis_name = "v"})(a, ct);
      };
    }
    if (wrap == JitOutside) return jit(run)(xv, wv);
    return run(xv, wv);
  };
  // `+ 0.0` makes every zero +0 on both sides: the loop and the vmap may sign a zero
  // differently, and a later log or divide would tell.
  st.fn = [=](const Ctx& ctx, const Array& x, const Ins& in) -> Array {
    return step(ctx, x, in) + 0.0;
  };
  return st;
}

}  // namespace fuzz
