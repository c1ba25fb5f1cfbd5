// The fuzzer's vocabulary: one table entry per op (name, arity, flags, how to draw
// its parameters). Adding a primitive is one line here; see README.md.
#include <algorithm>
#include <limits>
#include <numeric>

#include "fuzz.h"

namespace fuzz {

using namespace tsr;

namespace {

using AL = ArrayLike;

Step mk(std::string text, OpFn fn) { return Step{"", std::move(text), std::move(fn), {}}; }

std::string in_name(int k) { return "in" + std::to_string(k); }
std::string ax(std::optional<int> a) { return a ? std::to_string(*a) : "None"; }
std::string dn(DType d) { return dtype_name(d); }

// ---- operand drawers -------------------------------------------------------------

/** A second operand: a weak scalar or a new input broadcastable against x. */
struct Operand {
  int kind = 0;  // 0 input, 1 int, 2 double, 3 bool
  int idx = 0;
  int64_t iv = 0;
  double dv = 0;
  std::string text;
  AL get(const Ins& in) const {
    switch (kind) {
      case 1:
        return AL(iv);
      case 2:
        return AL(dv);
      case 3:
        return AL(iv != 0);
      default:
        return AL(in[static_cast<size_t>(idx)]);
    }
  }
};

Operand operand(Gen& g, std::optional<DType> dt = {}) {
  Operand o;
  if (g.r.coin(0.25)) {
    o.kind = g.r.range(1, 3);
    o.iv = g.r.range(-3, 3);
    o.dv = g.r.range(-8, 8) / 4.0;
    o.text = o.kind == 1   ? std::to_string(o.iv)
             : o.kind == 2 ? std::to_string(o.dv)
                           : (o.iv ? "true" : "false");
    return o;
  }
  DType d = dt ? *dt : (g.r.coin(0.6) ? g.dt() : g.dtype());
  o.idx = g.input(g.bcast_shape(g.xs()), d);
  o.text = in_name(o.idx);
  return o;
}

using Bin = Array (*)(const AL&, const AL&);
Step binary(Gen& g, const char* name, Bin f, bool allow_swap = true) {
  Operand b = operand(g);
  bool swap = allow_swap && g.r.coin(0.3);
  std::string t = std::string(name) + "(" + (swap ? b.text + ", x" : "x, " + b.text) + ")";
  return mk(t, [=](const Ctx&, const Array& x, const Ins& in) {
    return swap ? f(b.get(in), AL(x)) : f(AL(x), b.get(in));
  });
}

using Un = Array (*)(const Array&);
Step unary(const char* name, Un f) {
  return mk(std::string(name) + "(x)",
            [=](const Ctx&, const Array& x, const Ins&) { return f(x); });
}

/** Reduction axes: all, one, or several distinct. */
AxisArg axes(Gen& g, std::string& text) {
  int rank = g.rank();
  if (g.r.coin(0.25)) {
    text = "None";
    return AxisArg();
  }
  if (rank == 0 || g.r.coin(0.6)) {
    int a = g.axis(rank);
    text = std::to_string(a);
    return AxisArg(a);
  }
  std::vector<int> v;
  for (int d = 0; d < rank; ++d)
    if (g.r.coin(0.5)) v.push_back(d);
  if (g.r.coin(0.05) && !v.empty()) v.push_back(v[0]);  // duplicate
  text = str(v);
  return AxisArg(v);
}

Shape reduced_shape(const Shape& s, const AxisArg& a, bool keepdims) {
  int rank = static_cast<int>(s.size());
  std::vector<bool> red(static_cast<size_t>(rank), a.all());
  for (int x : a.axes())
    if (x >= -rank && x < rank) red[static_cast<size_t>((x + rank) % rank)] = true;
  Shape o;
  for (int d = 0; d < rank; ++d)
    if (!red[static_cast<size_t>(d)])
      o.push_back(s[static_cast<size_t>(d)]);
    else if (keepdims)
      o.push_back(1);
  return o;
}

using Red = Array (*)(const Array&, const AxisArg&, const ReduceOptions&);
Step reduce(Gen& g, const char* name, Red f, bool out_sharding, bool dtype_opt) {
  std::string at;
  AxisArg a = axes(g, at);
  bool keep = g.r.coin(0.25);
  std::optional<PartitionSpec> os;
  if (out_sharding && g.r.coin(0.5)) {
    os = g.out_spec(reduced_shape(g.xs(), a, keep), 0.5);
    g.unreduced = !os->unreduced().empty();
  }
  std::optional<DType> dt;
  if (dtype_opt && g.r.coin(0.1)) dt = g.dtype();
  std::string t = std::string(name) + "(x, axis=" + at + (keep ? ", keepdims" : "") +
                  (os ? ", out_sharding=" + str(os) : "") + (dt ? ", dtype=" + dn(*dt) : "") + ")";
  return mk(t, [=](const Ctx& c, const Array& x, const Ins&) {
    ReduceOptions o;
    o.keepdims = keep;
    o.out_sharding = c.sh(os);
    o.dtype = dt;
    return f(x, a, o);
  });
}

Array sum_(const Array& x, const AxisArg& a, const ReduceOptions& o) { return sum(x, a, o); }
Array prod_(const Array& x, const AxisArg& a, const ReduceOptions& o) { return prod(x, a, o); }
Array max_(const Array& x, const AxisArg& a, const ReduceOptions& o) { return max(x, a, o); }
Array min_(const Array& x, const AxisArg& a, const ReduceOptions& o) { return min(x, a, o); }
Array mean_(const Array& x, const AxisArg& a, const ReduceOptions& o) { return mean(x, a, o); }
Array var_(const Array& x, const AxisArg& a, const ReduceOptions& o) { return var(x, a, 0, o); }
Array any_(const Array& x, const AxisArg& a, const ReduceOptions& o) { return any(x, a, o); }
Array all_(const Array& x, const AxisArg& a, const ReduceOptions& o) { return tsr::all(x, a, o); }

using Cum = Array (*)(const Array&, std::optional<int>, const CumOptions&);
Step cumulative(Gen& g, const char* name, Cum f) {
  std::optional<int> a;
  if (g.r.coin(0.85)) a = g.axis(g.rank());
  bool rev = g.r.coin(0.3);
  std::string t = std::string(name) + "(x, axis=" + ax(a) + (rev ? ", reverse" : "") + ")";
  return mk(t, [=](const Ctx&, const Array& x, const Ins&) {
    CumOptions o;
    o.reverse = rev;
    return f(x, a, o);
  });
}

/** lax.associative_scan with an elementwise combine (the scan's slices, pads and
 *  concatenations; cumprod/cummax/... jvps use it too). */
Step d_associative_scan(Gen& g) {
  int a = g.axis(std::max(1, g.rank()));
  bool rev = g.r.coin(0.3);
  int kind = g.r.below(4);
  static const char* names[] = {"add", "maximum", "minimum", "multiply"};
  return mk("associative_scan(" + std::string(names[kind]) + ", x, " + (rev ? "reverse, " : "") +
                std::to_string(a) + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              return associative_scan(
                  [kind](const Array& p, const Array& q) {
                    switch (kind) {
                      case 0:
                        return p + q;
                      case 1:
                        return maximum(p, q);
                      case 2:
                        return minimum(p, q);
                      default:
                        return p * q;
                    }
                  },
                  x, rev, a);
            });
}

// ---- individual draws --------------------------------------------------------------

Step d_integer_pow(Gen& g) {
  int y = g.r.range(-1, 3);
  return mk("integer_pow(x, " + std::to_string(y) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return integer_pow(x, y); });
}
// Any dtype, valid or not: width changes add/remove a trailing dim; bool refuses.
Step d_bitcast(Gen& g) {
  DType d = g.dtype();
  return mk("bitcast_convert_type(x, " + dn(d) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return bitcast_convert_type(x, d); });
}

Step d_view(Gen& g) {
  DType d = g.dtype();
  return mk("x.view(" + dn(d) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return x.view(d); });
}

Step d_astype(Gen& g) {
  DType d = g.dtype();
  return mk("astype(x, " + dn(d) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return astype(x, d); });
}
Step d_convert(Gen& g) {
  DType d = g.r.coin(0.5) ? g.float_dtype() : g.dtype();
  std::optional<PartitionSpec> s;
  if (g.r.coin(0.5)) s = g.out_spec(g.xs(), 0.3);
  return mk("convert_element_type(x, " + dn(d) + ", sharding=" + str(s) + ")",
            [=](const Ctx& c, const Array& x, const Ins&) {
              return convert_element_type(x, d, {.sharding = c.sh(s)});
            });
}
Step d_where(Gen& g) {
  int ci = g.input(g.bcast_shape(g.xs()), bool_);
  Operand y = operand(g);
  return mk("where(" + in_name(ci) + ", x, " + y.text + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return where(in[static_cast<size_t>(ci)], x, y.get(in));
            });
}
Step d_select_n(Gen& g) {
  bool b = g.r.coin(0.6);
  int wi = g.input(g.r.coin(0.9) ? g.xs() : g.shape(), b ? bool_ : int32);
  if (!b)  // keep int32 cases in range 0..1
    for (auto& v : g.c.inputs[static_cast<size_t>(wi)].values) v = v > 0 ? 1 : 0;
  if (!b)
    g.c.inputs[static_cast<size_t>(wi)].oracle =
        array<double>(g.c.inputs[static_cast<size_t>(wi)].values,
                      g.c.inputs[static_cast<size_t>(wi)].shape)
            .astype(int32);
  int ci = g.input(g.xs(), g.r.coin(0.9) ? g.dt() : g.dtype());
  return mk("select_n(" + in_name(wi) + ", {x, " + in_name(ci) + "})",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return select_n(in[static_cast<size_t>(wi)], {x, in[static_cast<size_t>(ci)]});
            });
}
Step d_clamp(Gen& g) {
  Operand lo = operand(g), hi = operand(g);
  return mk(
      "clamp(" + lo.text + ", x, " + hi.text + ")",
      [=](const Ctx&, const Array& x, const Ins& in) { return clamp(lo.get(in), x, hi.get(in)); });
}
Step d_clip(Gen& g) {
  Operand lo = operand(g), hi = operand(g);
  bool has_lo = g.r.coin(0.8), has_hi = g.r.coin(0.8);
  return mk("clip(x, " + (has_lo ? lo.text : "None") + ", " + (has_hi ? hi.text : "None") + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              std::optional<AL> l, h;
              if (has_lo) l = lo.get(in);
              if (has_hi) h = hi.get(in);
              return clip(x, l, h);
            });
}
Step d_nan_to_num(Gen&) {
  return mk("nan_to_num(x)", [](const Ctx&, const Array& x, const Ins&) { return nan_to_num(x); });
}
Step d_isclose(Gen& g) {
  return binary(g, "isclose", [](const AL& a, const AL& b) { return isclose(a, b); });
}

Step d_argmax(Gen& g) {
  std::optional<int> a;
  if (g.r.coin(0.8)) a = g.axis(g.rank());
  bool keep = g.r.coin(0.2), mx = g.r.coin(0.5);
  return mk(std::string(mx ? "argmax" : "argmin") + "(x, axis=" + ax(a) +
                (keep ? ", keepdims" : "") + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              return mx ? argmax(x, a, keep) : argmin(x, a, keep);
            });
}
Step d_logsumexp(Gen& g) {
  std::string at;
  AxisArg a = axes(g, at);
  bool keep = g.r.coin(0.3);
  return mk("logsumexp(x, axis=" + at + (keep ? ", keepdims" : "") + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return logsumexp(x, a, keep); });
}
Step d_softmax(Gen& g) {
  int a = g.axis(g.rank());
  bool lg = g.r.coin(0.5);
  return mk(std::string(lg ? "log_softmax" : "softmax") + "(x, " + std::to_string(a) + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              return lg ? log_softmax(x, a) : softmax(x, a);
            });
}

/** dot_general of x with a new rhs: contract some dims of x, batch some. */
Step d_dot_general(Gen& g) {
  int rank = g.rank();
  std::vector<int> dims(static_cast<size_t>(rank));
  std::iota(dims.begin(), dims.end(), 0);
  std::vector<int> lc, lb;
  for (int d : dims) {
    int k = g.r.below(4);
    if (k == 0)
      lc.push_back(d);
    else if (k == 1 && g.r.coin(0.5))
      lb.push_back(d);
  }
  // rhs: batch dims first, then contracting (in a shuffled order), then 0-2 free dims.
  Shape rs;
  DotDimensionNumbers dn_;
  dn_.lhs_contracting = lc;
  dn_.lhs_batch = lb;
  for (int d : lb) {
    dn_.rhs_batch.push_back(static_cast<int>(rs.size()));
    rs.push_back(g.xs()[static_cast<size_t>(d)]);
  }
  for (int d : lc) {
    dn_.rhs_contracting.push_back(static_cast<int>(rs.size()));
    rs.push_back(g.xs()[static_cast<size_t>(d)] + (g.r.coin(0.03) ? 1 : 0));
  }
  int free = g.r.below(3);
  for (int k = 0; k < free; ++k) rs.push_back(g.size());
  DType rd = g.r.coin(0.8) ? g.dt() : g.dtype();
  int ri = g.input(rs, rd);
  std::optional<PartitionSpec> os;
  Shape out;
  for (int d : lb) out.push_back(g.xs()[static_cast<size_t>(d)]);
  for (int d = 0; d < rank; ++d)
    if (std::find(lc.begin(), lc.end(), d) == lc.end() &&
        std::find(lb.begin(), lb.end(), d) == lb.end())
      out.push_back(g.xs()[static_cast<size_t>(d)]);
  for (int k = 0; k < free; ++k)
    out.push_back(rs[rs.size() - static_cast<size_t>(free) + static_cast<size_t>(k)]);
  std::set<std::string> contracted_axes;
  if (g.xspec && g.r.coin(0.7)) {
    // Follow x's layout: batch and contracting dims of rhs sharded as x's.
    const auto& xe = g.xspec->entries();
    std::vector<PartitionEntry> re(rs.size());
    for (size_t k = 0; k < lb.size(); ++k) re[k] = xe[static_cast<size_t>(lb[k])];
    for (size_t k = 0; k < lc.size(); ++k) {
      re[lb.size() + k] = xe[static_cast<size_t>(lc[k])];
      for (const auto& a : xe[static_cast<size_t>(lc[k])].axes()) contracted_axes.insert(a);
    }
    g.c.inputs[static_cast<size_t>(ri)].spec = PartitionSpec(re);
  }
  if (!contracted_axes.empty() && g.r.coin(0.6)) {
    // The contraction leaves partial sums: keep them unreduced.
    std::vector<PartitionEntry> oe;
    for (int d : lb) oe.push_back(g.xspec->entries()[static_cast<size_t>(d)]);
    os = PartitionSpec(oe, contracted_axes);
    g.unreduced = true;
  } else if (g.r.coin(0.5)) {
    os = g.out_spec(out, 0.4);
    g.unreduced = !os->unreduced().empty();
  }
  std::optional<DType> pet;
  if (g.r.coin(0.1)) pet = g.dtype();
  std::string t = "dot_general(x, " + in_name(ri) + ", contract=(" + str(dn_.lhs_contracting) +
                  "," + str(dn_.rhs_contracting) + "), batch=(" + str(dn_.lhs_batch) + "," +
                  str(dn_.rhs_batch) + "), out_sharding=" + str(os) +
                  (pet ? ", preferred=" + dn(*pet) : "") + ")";
  return mk(t, [=](const Ctx& c, const Array& x, const Ins& in) {
    return dot_general(x, in[static_cast<size_t>(ri)], dn_,
                       {.out_sharding = c.sh(os), .preferred_element_type = pet});
  });
}

/** A fresh dot whose contracting dim is sharded on one axis on both sides, with an
 *  Unreduced out_sharding: an unreduced intermediate for the next steps. Ignores x. */
Step d_dot_unreduced(Gen& g) {
  const MeshDef& m = g.mesh();
  std::string a = g.r.pick(m.names);
  int64_t k = 8, rows = g.r.pick(std::vector<int64_t>{1, 2, 4, 8}),
          cols = g.r.pick(std::vector<int64_t>{1, 2, 4});
  DType d = g.r.coin(0.7) ? float32 : g.dtype();
  int li = g.input({rows, k}, d, false), ri = g.input({k, cols}, d, false);
  g.c.inputs[static_cast<size_t>(li)].spec = P(nullptr, a.c_str());
  g.c.inputs[static_cast<size_t>(ri)].spec = P(a.c_str(), nullptr);
  PartitionSpec os = PartitionSpec({}, {a});
  g.unreduced = true;
  return mk("dot_general(" + in_name(li) + ", " + in_name(ri) +
                ", contract=([1],[0]), out_sharding=" + str(os) + ")",
            [=](const Ctx& c, const Array&, const Ins& in) {
              return dot_general(in[static_cast<size_t>(li)], in[static_cast<size_t>(ri)],
                                 {{1}, {0}}, {.out_sharding = c.sh(os)});
            });
}

Step d_matmul(Gen& g) {
  int rank = g.rank();
  Shape rs;
  if (rank == 0 || g.r.coin(0.2)) {
    rs = g.shape(1, 2);
  } else {
    int64_t k = g.xs().back();
    if (rank == 1 || g.r.coin(0.3))
      rs = {k, g.size()};
    else
      rs = {k};
    if (rank >= 3 && g.r.coin(0.5)) rs.insert(rs.begin(), g.xs()[static_cast<size_t>(rank - 3)]);
  }
  int ri = g.input(rs, g.r.coin(0.8) ? g.dt() : g.dtype());
  bool dot_ = g.r.coin(0.3);
  return mk(std::string(dot_ ? "dot" : "matmul") + "(x, " + in_name(ri) + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return dot_ ? dot(x, in[static_cast<size_t>(ri)])
                          : matmul(x, in[static_cast<size_t>(ri)]);
            });
}
Step d_outer(Gen& g) {
  int ri = g.input(g.shape(0, 2), g.dt());
  bool kr = g.r.coin(0.4);
  return mk(std::string(kr ? "kron" : "outer") + "(x, " + in_name(ri) + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return kr ? kron(x, in[static_cast<size_t>(ri)])
                        : outer(x, in[static_cast<size_t>(ri)]);
            });
}

Step d_reshape(Gen& g) {
  Shape s = g.xs();
  int64_t n = numel(s);
  Shape ns;
  switch (g.r.below(4)) {
    case 0:
      ns = {n};
      break;
    case 1:  // split the first dim in two when it is even, else add a 1
      ns = s;
      if (!ns.empty() && ns[0] % 2 == 0 && ns[0] > 0) {
        ns[0] /= 2;
        ns.insert(ns.begin(), 2);
      } else {
        ns.insert(ns.begin(), 1);
      }
      break;
    case 2:  // merge the last two
      ns = s;
      if (ns.size() >= 2) {
        ns[ns.size() - 2] *= ns.back();
        ns.pop_back();
      }
      break;
    default:
      ns = s;
      if (!ns.empty()) ns[0] = -1;
      if (g.r.coin(0.1)) ns.push_back(3);  // maybe invalid
  }
  std::optional<PartitionSpec> os;
  if (g.r.coin(0.4)) {
    Shape concrete = ns;
    for (auto& d : concrete)
      if (d < 0) d = s.empty() ? 1 : s[0];
    os = g.out_spec(concrete, 0.1);
  }
  return mk("reshape(x, " + str(ns) + ", out_sharding=" + str(os) + ")",
            [=](const Ctx& c, const Array& x, const Ins&) { return reshape(x, ns, c.sh(os)); });
}
Step d_transpose(Gen& g) {
  std::vector<int> p(static_cast<size_t>(g.rank()));
  std::iota(p.begin(), p.end(), 0);
  for (size_t i = p.size(); i > 1; --i)
    std::swap(p[i - 1], p[static_cast<size_t>(g.r.below(static_cast<int>(i)))]);
  if (g.r.coin(0.2)) p.clear();
  return mk("transpose(x, " + str(p) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return transpose(x, p); });
}
Step d_squeeze(Gen& g) {
  std::vector<int> a;
  for (int d = 0; d < g.rank(); ++d)
    if (g.xs()[static_cast<size_t>(d)] == 1 && g.r.coin(0.7)) a.push_back(d);
  if (g.r.coin(0.1) && g.rank()) a.push_back(g.axis(g.rank()));
  bool all_ = a.empty() && g.r.coin(0.5);
  return mk("squeeze(x, " + (all_ ? std::string("None") : str(a)) + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              return all_ ? squeeze(x) : squeeze(x, AxisArg(a));
            });
}
Step d_expand_dims(Gen& g) {
  int a = g.axis(g.rank() + 1);
  return mk("expand_dims(x, " + std::to_string(a) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return expand_dims(x, a); });
}
Step d_broadcast_to(Gen& g) {
  Shape s = g.xs();
  for (auto& d : s)
    if (d == 1 && g.r.coin(0.5)) d = g.size();
  if (g.r.coin(0.5)) s.insert(s.begin(), g.size());
  std::optional<PartitionSpec> os;
  if (g.r.coin(0.4)) os = g.out_spec(s);
  return mk("broadcast_to(x, " + str(s) + ", out_sharding=" + str(os) + ")",
            [=](const Ctx& c, const Array& x, const Ins&) { return broadcast_to(x, s, c.sh(os)); });
}
Step d_slice(Gen& g) {
  Shape st, li, sd;
  for (int64_t d : g.xs()) {
    int64_t a = d ? g.r.below(static_cast<int>(d)) : 0;
    int64_t b = a + g.r.below(static_cast<int>(d - a) + 1);
    st.push_back(a);
    li.push_back(b);
    sd.push_back(g.r.coin(0.3) ? 2 : 1);
  }
  if (g.r.coin(0.05) && !li.empty()) li[0] += 1;
  bool strides = g.r.coin(0.5);
  return mk("slice(x, " + str(st) + ", " + str(li) + (strides ? ", " + str(sd) : "") + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              return slice(x, st, li, strides ? sd : Shape{});
            });
}
Step d_dynamic_slice(Gen& g) {
  std::vector<int64_t> st;
  Shape sz;
  for (int64_t d : g.xs()) {
    st.push_back(g.r.range(-1, static_cast<int>(d) + 1));
    sz.push_back(d ? g.r.range(0, static_cast<int>(d)) : 0);
  }
  return mk("dynamic_slice(x, " + str(st) + ", " + str(sz) + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              std::vector<AL> s;
              for (auto v : st) s.emplace_back(v);
              return dynamic_slice(x, s, sz);
            });
}
Step d_dynamic_update_slice(Gen& g) {
  Shape us;
  std::vector<int64_t> st;
  for (int64_t d : g.xs()) {
    us.push_back(d ? g.r.range(0, static_cast<int>(d)) : 0);
    st.push_back(g.r.range(-1, static_cast<int>(d)));
  }
  int ui = g.input(us, g.r.coin(0.9) ? g.dt() : g.dtype());
  return mk("dynamic_update_slice(x, " + in_name(ui) + ", " + str(st) + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              std::vector<AL> s;
              for (auto v : st) s.emplace_back(v);
              return dynamic_update_slice(x, in[static_cast<size_t>(ui)], s);
            });
}
Step d_pad(Gen& g) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> cfg;
  std::string t = "pad(x, 0, [";
  for (int d = 0; d < g.rank(); ++d) {
    int64_t lo = g.r.range(-1, 2), hi = g.r.range(-1, 2), in = g.r.coin(0.2) ? 1 : 0;
    cfg.emplace_back(lo, hi, in);
    t += "(" + std::to_string(lo) + "," + std::to_string(hi) + "," + std::to_string(in) + ")";
  }
  return mk(t + "])", [=](const Ctx&, const Array& x, const Ins&) { return pad(x, AL(0), cfg); });
}
Step d_concatenate(Gen& g) {
  int a = g.axis(std::max(1, g.rank()));
  Shape s = g.xs();
  if (!s.empty())
    s[static_cast<size_t>((a % static_cast<int>(s.size()) + static_cast<int>(s.size())) %
                          static_cast<int>(s.size()))] = g.size();
  int k = g.input(s, g.r.coin(0.8) ? g.dt() : g.dtype());
  bool st = g.r.coin(0.3);
  if (st) g.c.inputs[static_cast<size_t>(k)].shape = g.xs();
  if (st) {
    auto& id = g.c.inputs[static_cast<size_t>(k)];
    id.values.resize(static_cast<size_t>(numel(id.shape)), 1.0);
    id.oracle = array<double>(id.values, id.shape).astype(id.dtype);
    id.spec = g.spec(id.shape);
  }
  return mk(std::string(st ? "stack" : "concatenate") + "({x, " + in_name(k) + "}, " +
                std::to_string(a) + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return st ? stack({x, in[static_cast<size_t>(k)]}, a)
                        : concatenate({x, in[static_cast<size_t>(k)]}, a);
            });
}
Step d_split(Gen& g) {
  int a = g.axis(std::max(1, g.rank()));
  int64_t n = g.r.range(1, 4);
  int pick = g.r.below(static_cast<int>(n));
  return mk("split(x, " + std::to_string(n) + ", " + std::to_string(a) + ")[" +
                std::to_string(pick) + "]",
            [=](const Ctx&, const Array& x, const Ins&) {
              return split(x, n, a)[static_cast<size_t>(pick)];
            });
}
Step d_rev(Gen& g) {
  std::vector<int> d;
  for (int k = 0; k < g.rank(); ++k)
    if (g.r.coin(0.5)) d.push_back(k);
  bool fl = g.r.coin(0.3);
  return mk(
      std::string(fl ? "flip" : "rev") + "(x, " + str(d) + ")",
      [=](const Ctx&, const Array& x, const Ins&) { return fl ? flip(x, AxisArg(d)) : rev(x, d); });
}
Step d_roll(Gen& g) {
  int64_t s = g.r.range(-3, 3);
  std::optional<int> a;
  if (g.r.coin(0.8)) a = g.axis(g.rank());
  return mk("roll(x, " + std::to_string(s) + ", " + ax(a) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return roll(x, s, a); });
}
Step d_tile(Gen& g) {
  std::vector<int64_t> reps;
  for (int k = 0, n = g.r.range(0, g.rank() + 1); k < n; ++k) reps.push_back(g.r.range(1, 2));
  return mk("tile(x, " + str(reps) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return tile(x, reps); });
}
Step d_repeat(Gen& g) {
  int64_t n = g.r.range(0, 2);
  std::optional<int> a;
  if (g.r.coin(0.8)) a = g.axis(g.rank());
  return mk("repeat(x, " + std::to_string(n) + ", " + ax(a) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return repeat(x, n, a); });
}
Step d_triu(Gen& g) {
  int k = g.r.range(-1, 1);
  bool up = g.r.coin(0.5);
  return mk(std::string(up ? "triu" : "tril") + "(x, " + std::to_string(k) + ")",
            [=](const Ctx&, const Array& x, const Ins&) { return up ? triu(x, k) : tril(x, k); });
}
Step d_diagonal(Gen& g) {
  int off = g.r.range(-1, 1), a1 = g.axis(g.rank()), a2 = g.axis(g.rank());
  bool tr = g.r.coin(0.3);
  g.c.reorders = g.c.reorders || tr;  // trace sums: partial sums when the diagonal is sharded
  return mk(std::string(tr ? "trace" : "diagonal") + "(x, " + std::to_string(off) + ", " +
                std::to_string(a1) + ", " + std::to_string(a2) + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              return tr ? trace(x, off, a1, a2) : diagonal(x, off, a1, a2);
            });
}
Step d_swapaxes(Gen& g) {
  int a = g.axis(g.rank()), b = g.axis(g.rank());
  bool mv = g.r.coin(0.5);
  return mk(std::string(mv ? "moveaxis" : "swapaxes") + "(x, " + std::to_string(a) + ", " +
                std::to_string(b) + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              return mv ? moveaxis(x, a, b) : swapaxes(x, a, b);
            });
}
Step d_ravel(Gen&) {
  return mk("ravel(x)", [](const Ctx&, const Array& x, const Ins&) { return ravel(x); });
}
Step d_unstack(Gen& g) {
  int a = g.axis(std::max(1, g.rank()));
  int pick = g.r.below(2);
  return mk("unstack(x, " + std::to_string(a) + ")[" + std::to_string(pick) + "]",
            [=](const Ctx&, const Array& x, const Ins&) {
              auto v = unstack(x, a);
              return v.empty() ? x : v[static_cast<size_t>(pick) % v.size()];
            });
}

// ---- sharding ------------------------------------------------------------------------
Step d_reshard(Gen& g) {
  PartitionSpec s = g.out_spec(g.xs(), 0.3);
  g.unreduced = !s.unreduced().empty();
  bool dp = g.r.coin(0.3);
  return mk(std::string(dp ? "device_put" : "reshard") + "(x, " + str(s) + ")",
            [=](const Ctx& c, const Array& x, const Ins&) {
              if (c.oracle) return x;
              return dp ? device_put(x, s) : reshard(x, s);
            });
}
Step d_wsc(Gen& g) {
  PartitionSpec s = g.spec(g.xs());
  return mk("with_sharding_constraint(x, " + str(s) + ")",
            [=](const Ctx& c, const Array& x, const Ins&) {
              return c.oracle ? x : with_sharding_constraint(x, s);
            });
}

// ---- indexing ------------------------------------------------------------------------
Step d_getitem(Gen& g) {
  std::vector<Index> idx;
  std::string t = "x[";
  for (int d = 0; d < g.rank() && g.r.coin(0.8); ++d) {
    int64_t n = g.xs()[static_cast<size_t>(d)];
    switch (g.r.below(4)) {
      case 0: {
        int64_t i = n ? g.r.range(-static_cast<int>(n), static_cast<int>(n) - 1) : 0;
        idx.emplace_back(i);
        t += std::to_string(i) + ",";
        break;
      }
      case 1: {
        int64_t st = g.r.range(-2, 3);
        int64_t step = g.r.coin(0.2) ? -1 : g.r.range(1, 2);
        idx.emplace_back(Slice{st, std::nullopt, step});
        t += std::to_string(st) + "::" + std::to_string(step) + ",";
        break;
      }
      case 2:
        idx.emplace_back(newaxis);
        t += "None,";
        break;
      default:
        idx.emplace_back(tsr::all);
        t += ":,";
    }
  }
  return mk(t + "]", [=](const Ctx&, const Array& x, const Ins&) { return tsr::index(x, idx); });
}

/** An int32 index array with values in [-n-1, n]. */
int index_input(Gen& g, int64_t n, const Shape& s) {
  int k = g.input(s, int32);
  auto& in = g.c.inputs[static_cast<size_t>(k)];
  for (auto& v : in.values) v = g.r.range(-static_cast<int>(n) - 1, static_cast<int>(n));
  in.oracle = array<double>(in.values, in.shape).astype(int32);
  return k;
}

Step d_gather_index(Gen& g) {
  if (g.rank() == 0) return d_getitem(g);
  int64_t n = g.xs()[0];
  int k = index_input(g, n, g.shape(0, 2));
  std::optional<PartitionSpec> os;
  if (g.r.coin(0.4)) os = g.out_spec(g.shape(0, 2));
  static const std::vector<std::optional<IndexMode>> modes = {
      std::nullopt, IndexMode::FillOrDrop, IndexMode::Clip, IndexMode::PromiseInBounds};
  int mi = g.r.below(4);
  return mk(
      "x.at[" + in_name(k) + "].get(mode=" + std::to_string(mi) + ", out_sharding=" + str(os) + ")",
      [=](const Ctx& c, const Array& x, const Ins& in) {
        GetOptions o;
        o.out_sharding = c.sh(os);
        o.mode = modes[static_cast<size_t>(mi)];
        if (o.mode == IndexMode::PromiseInBounds) o.mode = IndexMode::Clip;  // OOB would be UB
        return At(x, {Index(in[static_cast<size_t>(k)])}).get(o);
      });
}
Step d_scatter(Gen& g) {
  if (g.rank() == 0) return d_getitem(g);
  int64_t n = g.xs()[0];
  Shape is = g.shape(0, 1);
  int k = index_input(g, n, is);
  Shape us = is;
  for (size_t d = 1; d < g.xs().size(); ++d) us.push_back(g.xs()[d]);
  if (g.r.coin(0.3)) us = g.bcast_shape(us);
  Operand u;
  if (g.r.coin(0.2)) {
    u = operand(g);
  } else {
    u.idx = g.input(us, g.r.coin(0.8) ? g.dt() : g.dtype());
    u.text = in_name(u.idx);
  }
  int kind = g.r.below(6);
  static const char* names[] = {"set", "add", "subtract", "mul", "min", "max"};
  std::optional<PartitionSpec> os;
  if (g.r.coin(0.3)) os = g.out_spec(g.xs());
  bool clipm = g.r.coin(0.3);
  return mk("x.at[" + in_name(k) + "]." + names[kind] + "(" + u.text +
                (clipm ? ", mode=clip" : "") + ", out_sharding=" + str(os) + ")",
            [=](const Ctx& c, const Array& x, const Ins& in) {
              UpdateOptions o;
              o.out_sharding = c.sh(os);
              if (clipm) o.mode = IndexMode::Clip;
              At a(x, {Index(in[static_cast<size_t>(k)])});
              AL v = u.get(in);
              switch (kind) {
                case 0:
                  return a.set(v, o);
                case 1:
                  return a.add(v, o);
                case 2:
                  return a.subtract(v, o);
                case 3:
                  return a.mul(v, o);
                case 4:
                  return a.min(v, o);
                default:
                  return a.max(v, o);
              }
            });
}
Step d_take(Gen& g) {
  std::optional<int> a;
  if (g.r.coin(0.7)) a = g.axis(g.rank());
  int64_t n =
      g.rank() ? g.xs()[static_cast<size_t>(((a ? *a : 0) % g.rank() + g.rank()) % g.rank())] : 1;
  int k = index_input(g, n, g.shape(0, 2));
  return mk("take(x, " + in_name(k) + ", " + ax(a) + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return take(x, in[static_cast<size_t>(k)], a);
            });
}
Step d_take_along(Gen& g) {
  int a = g.axis(std::max(1, g.rank()));
  Shape s = g.xs();
  int64_t n = 1;
  if (!s.empty()) {
    size_t d = static_cast<size_t>((a % g.rank() + g.rank()) % g.rank());
    n = s[d];
    s[d] = g.size();
  }
  int k = index_input(g, n, s);
  return mk("take_along_axis(x, " + in_name(k) + ", " + std::to_string(a) + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return take_along_axis(x, in[static_cast<size_t>(k)], a);
            });
}
Step d_one_hot(Gen& g) {
  int64_t n = g.r.range(0, 5);
  DType d = g.dtype();
  int a = g.r.coin(0.7) ? -1 : g.axis(g.rank() + 1);
  std::optional<PartitionSpec> os;
  if (g.r.coin(0.3)) {
    Shape s = g.xs();
    s.push_back(n);
    os = g.out_spec(s);
  }
  return mk(
      "one_hot(x, " + std::to_string(n) + ", " + dn(d) + ", " + std::to_string(a) + ", " + str(os) +
          ")",
      [=](const Ctx& c, const Array& x, const Ins&) { return one_hot(x, n, d, a, c.sh(os)); });
}

// ---- sorting ---------------------------------------------------------------------
Step d_sort(Gen& g) {
  std::optional<int> a;
  if (g.r.coin(0.85)) a = g.axis(g.rank());
  bool desc = g.r.coin(0.3), arg = g.r.coin(0.4);
  return mk(
      std::string(arg ? "argsort" : "sort") + "(x, " + ax(a) + (desc ? ", descending" : "") + ")",
      [=](const Ctx&, const Array& x, const Ins&) {
        return arg ? argsort(x, a, true, desc) : sort(x, a, true, desc);
      });
}
Step d_top_k(Gen& g) {
  int64_t k = g.r.range(0, 4);
  bool idx = g.r.coin(0.5);
  return mk("top_k(x, " + std::to_string(k) + ")." + (idx ? "indices" : "values"),
            [=](const Ctx&, const Array& x, const Ins&) {
              auto p = top_k(x, k);
              return idx ? p.second : p.first;
            });
}
Step d_searchsorted(Gen& g) {
  int k = g.input(g.shape(1, 1), g.dt());
  auto& in = g.c.inputs[static_cast<size_t>(k)];
  std::sort(in.values.begin(), in.values.end());
  in.oracle = array<double>(in.values, in.shape).astype(in.dtype);
  bool right = g.r.coin(0.5);
  return mk("searchsorted(" + in_name(k) + ", x, " + (right ? "right" : "left") + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return searchsorted(in[static_cast<size_t>(k)], AL(x), right ? "right" : "left");
            });
}

// ---- linear algebra (tsr::linalg) ---------------------------------------------------
// Well-posed uses of each decomposition (x x^T + n I is positive definite, x + x^T
// symmetric, singular values and eigenvalues are unique) so that sharded and oracle
// runs compare within rounding; a non-square, rank < 2, half-precision or
// matrix-sharded x is refused alike.
Step d_linalg(Gen& g) {
  static const char* names[] = {"cholesky",         "solve", "eigvalsh", "svdvals", "qr.R",
                                "triangular_solve", "det",   "slogdet",  "inv",     "lu.lu"};
  const int kind = g.r.below(10);
  g.c.reorders = true;
  auto mT = [](const Array& a) { return swapaxes(a, -1, -2); };
  // x as matrices: rank 0 and 1 gain trailing unit dimensions.
  auto base = [](const Array& x) {
    return x.ndim() == 0 ? reshape(x, {1, 1}) : x.ndim() == 1 ? expand_dims(x, -1) : x;
  };
  // Square matrices from any x: x x^T (a rank-deficient one is fine for det and lu).
  auto square = [mT, base](const Array& x) {
    Array b = base(x);
    return matmul(b, mT(b));
  };
  auto spd = [square](const Array& x) {
    Array s = square(x);
    const int64_t n = s.shape().back();
    return add(s, multiply(eye(n, -1, 0, s.dtype()), static_cast<double>(n) + 1.0));
  };
  return mk(std::string("linalg.") + names[kind] + "(x)",
            [=](const Ctx&, const Array& x, const Ins&) -> Array {
              // Off the integers: integer inputs give results that are exact integers
              // (eigenvalue 0), where a later floor or sign flips on rounding noise.
              auto off = [](const Array& r) { return add(r, 0.0137); };
              switch (kind) {
                case 0:
                  return off(linalg::cholesky(spd(x)));
                case 1:
                  return off(linalg::solve(spd(x), base(x)));
                case 2:
                  return off(linalg::eigvalsh(square(x)));
                case 3:
                  return off(linalg::svdvals(base(x)));
                case 4:
                  return off(linalg::qr(base(x), "r").R);
                case 5:
                  return off(linalg::triangular_solve(spd(x), base(x),
                                                      {.left_side = true, .lower = true}));
                case 6:
                  return off(linalg::det(square(x)));
                case 7:
                  return off(linalg::slogdet(spd(x)).logabsdet);
                case 8:
                  return off(linalg::inv(spd(x)));
                default:
                  return off(linalg::lu(base(x)).lu);
              }
            });
}

// ---- windowed reductions ------------------------------------------------------------
Step d_window(Gen& g) {
  const int r = g.rank();
  const int op = g.r.below(4);  // sum, max, min, avg_pool-like sum / size
  Shape dims, strides, wdil;
  for (int d = 0; d < r; ++d) {
    dims.push_back(g.r.coin(0.5) ? 1 : g.r.range(1, 3));
    strides.push_back(g.r.coin(0.7) ? 1 : 2);
    wdil.push_back(g.r.coin(0.85) ? 1 : 2);
  }
  const bool same = g.r.coin(0.4);
  static const char* names[] = {"add", "max", "min", "mean"};
  g.c.reorders = g.c.reorders || op == 0 || op == 3;
  return mk(
      std::string("reduce_window(x, ") + names[op] + ", " + str(dims) + ", strides " +
          str(strides) + ", " + (same ? "SAME" : "VALID") + ", window_dilation " + str(wdil) + ")",
      [=](const Ctx&, const Array& x, const Ins&) {
        const double inf = std::numeric_limits<double>::infinity();
        WindowOptions o{strides, same ? "SAME" : "VALID", {}, wdil};
        switch (op) {
          case 1:
            return reduce_window(x, -inf, WindowReducer::max, dims, o);
          case 2:
            return reduce_window(x, inf, WindowReducer::min, dims, o);
          case 3: {
            int64_t n = 1;
            for (int64_t d : dims) n *= d;
            return divide(reduce_window(x, 0, WindowReducer::add, dims, o), static_cast<double>(n));
          }
          default:
            return reduce_window(x, 0, WindowReducer::add, dims, o);
        }
      });
}

// ---- convolution -------------------------------------------------------------------
// x as (batch, feature, spatial...) (rank < 3: leading size-1 dims added) convolved with
// a fixed replicated kernel: 2 output features, windows of 1-3, strides 1-2, SAME or
// VALID, rhs dilation; a sharded feature dim is the rule's refusal, a sharded spatial
// dim a halo exchange, a gather or E9.
Step d_conv(Gen& g) {
  const int r = std::max(g.rank(), 3);
  const bool same = g.r.coin(0.5);
  Shape win, strides, rdil;
  for (int d = 2; d < r; ++d) {
    win.push_back(g.r.range(1, 3));
    strides.push_back(g.r.coin(0.7) ? 1 : 2);
    rdil.push_back(g.r.coin(0.8) ? 1 : 2);
  }
  g.c.reorders = true;
  return mk(std::string("conv_general_dilated(x, w") + str(win) + ", strides " + str(strides) +
                ", " + (same ? "SAME" : "VALID") + ", rhs_dilation " + str(rdil) + ")",
            [=](const Ctx&, const Array& x0, const Ins&) {
              Array x = is_floating(x0.dtype()) ? x0 : astype(x0, float32);
              while (x.ndim() < r) x = expand_dims(x, 0);
              Shape ws{2, x.shape()[1]};
              ws.insert(ws.end(), win.begin(), win.end());
              int64_t n = 1;
              for (int64_t d : ws) n *= d;
              Array w = reshape(sin(astype(arange(0, static_cast<double>(n)), x.dtype())), ws);
              return conv_general_dilated(x, w, strides, same ? "SAME" : "VALID",
                                          {.rhs_dilation = rdil});
            });
}

// ---- complex -----------------------------------------------------------------------
// z = complex(x, sin x) through a few complex ops and back to a real array (real, imag
// or abs), so the chain goes on: elementwise, so every layout of x is kept.
Step d_complex(Gen& g) {
  const int op = g.r.below(3);
  static const char* names[] = {"real(exp(z) * conj(z))", "abs(square(z) + z)",
                                "imag(log(z + 2) / (1 + z))"};
  return mk(std::string("complex(x, sin(x)) -> ") + names[op],
            [=](const Ctx&, const Array& x0, const Ins&) {
              Array x = x0.dtype() == float64 ? x0 : astype(x0, float32);
              Array z = complex(x, sin(x));
              switch (op) {
                case 0:
                  return real(multiply(exp(tanh(z)), conj(z)));
                case 1:
                  return abs(add(square(z), z));
                default:
                  return imag(divide(log(add(z, 2.0)), add(z, 1.0)));
              }
            });
}

// ---- fft ---------------------------------------------------------------------------
// A transform along the last axis and back to a real array of x's shape: real(fft),
// the irfft(rfft) round trip, or |ifft| along axis 0; rank 0 and empty axes pass x.
Step d_fft(Gen& g) {
  const int op = g.r.below(3);
  static const char* names[] = {"real(fft(complex(x, x / 2)))", "irfft(rfft(x), n)",
                                "abs(ifft(x, axis 0))"};
  g.c.reorders = true;
  return mk(std::string("fft: ") + names[op], [=](const Ctx&, const Array& x0, const Ins&) {
    if (x0.ndim() == 0 || x0.shape().back() == 0 || x0.shape()[0] == 0) return x0;
    Array x = x0.dtype() == float64 ? x0 : astype(x0, float32);
    switch (op) {
      case 0:
        return real(fft::fft(complex(x, multiply(x, 0.5))));
      case 1:
        return fft::irfft(fft::rfft(x), x.shape().back());
      default:
        return abs(fft::ifft(x, std::nullopt, 0));
    }
  });
}

// ---- creation (ignore x) ---------------------------------------------------------
Step d_full(Gen& g) {
  Shape s = g.shape();
  DType d = g.dtype();
  std::optional<PartitionSpec> p;
  if (g.r.coin(0.7)) p = g.spec(s);
  int kind = g.r.below(4);
  static const char* names[] = {"zeros", "ones", "full", "iota"};
  return mk(std::string(names[kind]) + "(" + str(s) + ", " + dn(d) + ", " + str(p) + ")",
            [=](const Ctx& c, const Array&, const Ins&) {
              switch (kind) {
                case 0:
                  return zeros(s, d, c.pl(p));
                case 1:
                  return ones(s, d, c.pl(p));
                case 2:
                  return full(s, 2.5, d, c.pl(p));
                default:
                  return iota(s, d, c.pl(p));
              }
            });
}
Step d_arange(Gen& g) {
  int64_t n = g.size();
  DType d = g.r.coin(0.5) ? int32 : g.dtype();
  std::optional<PartitionSpec> p;
  if (g.r.coin(0.7)) p = g.spec({n});
  int kind = g.r.below(3);
  return mk(std::string(kind == 0   ? "arange"
                        : kind == 1 ? "linspace"
                                    : "eye") +
                "(" + std::to_string(n) + ", " + dn(d) + ", " + str(p) + ")",
            [=](const Ctx& c, const Array&, const Ins&) {
              if (kind == 0) return arange(0, static_cast<double>(n), 1, d, c.pl(p));
              if (kind == 1) return linspace(-1, 1, n, true, d, c.pl(p));
              return eye(n, -1, 0, d, c.pl(p));
            });
}
Step d_broadcasted_iota(Gen& g) {
  Shape s = g.shape(1, 4);
  int dim = g.axis(static_cast<int>(s.size()));
  DType d = g.dtype();
  std::optional<PartitionSpec> p;
  if (g.r.coin(0.7)) p = g.spec(s);
  return mk(
      "broadcasted_iota(" + dn(d) + ", " + str(s) + ", " + std::to_string(dim) + ", " + str(p) +
          ")",
      [=](const Ctx& c, const Array&, const Ins&) { return broadcasted_iota(d, s, dim, c.pl(p)); });
}
Step d_like(Gen& g) {
  int kind = g.r.below(3);
  std::optional<DType> d;
  if (g.r.coin(0.3)) d = g.dtype();
  std::optional<PartitionSpec> p;
  if (g.r.coin(0.3)) p = g.spec(g.xs());
  static const char* names[] = {"zeros_like", "ones_like", "full_like"};
  return mk(std::string(names[kind]) + "(x, " + (d ? dn(*d) : "None") + ", " + str(p) + ")",
            [=](const Ctx& c, const Array& x, const Ins&) {
              if (kind == 0) return zeros_like(x, d, c.pl(p));
              if (kind == 1) return ones_like(x, d, c.pl(p));
              return full_like(x, -1.5, d, c.pl(p));
            });
}

// ---- random ------------------------------------------------------------------------
Step d_random(Gen& g) {
  Shape s = g.shape();
  int kind = g.r.below(5);
  int64_t seed = g.r.range(0, 1000);
  std::optional<PartitionSpec> p;
  if (g.r.coin(0.7)) p = g.out_spec(s);
  DType fd = g.float_dtype();
  static const char* names[] = {"uniform", "normal", "bits", "randint", "bernoulli"};
  return mk("random." + std::string(names[kind]) + "(key(" + std::to_string(seed) + "), " + str(s) +
                ", " + (kind < 2 ? dn(fd) + ", " : "") + str(p) + ")",
            [=](const Ctx& c, const Array&, const Ins&) {
              Array k = random::key(seed);
              switch (kind) {
                case 0:
                  return random::uniform(k, s, fd, 0.0, 1.0, c.sh(p));
                case 1:
                  return random::normal(k, s, fd, c.sh(p));
                case 2:
                  return random::bits(k, s, uint32, c.sh(p));
                case 3:
                  return random::randint(k, s, -5, 5, int32, c.sh(p));
                default:
                  return random::bernoulli(k, 0.5, s, c.sh(p));
              }
            });
}
Step d_permutation(Gen& g) {
  int64_t seed = g.r.range(0, 1000);
  int a = g.axis(std::max(1, g.rank()));
  return mk("random.permutation(key(" + std::to_string(seed) + "), x, " + std::to_string(a) + ")",
            [=](const Ctx&, const Array& x, const Ins&) {
              return random::permutation(random::key(seed), x, a);
            });
}

// ---- autodiff ----------------------------------------------------------------------
// Under the fuzzer's derivative check (run.cpp) these are differentiated; in primal
// runs they must behave as the functions they wrap.

Step d_stop_gradient(Gen&) {
  return mk("stop_gradient(x)",
            [](const Ctx&, const Array& x, const Ins&) { return stop_gradient(x); });
}

// custom_jvp functions with hand-written rules: softplus with JAX's stable rule,
// floor with a straight-through rule (the rule is not floor's derivative, so the
// derivative check sees the rule used), and a product of two arguments.
const auto kSoftplus = custom_jvp([](const Array& x) { return log1p(exp(x)); },
                                  [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                    const auto& [x] = p;
                                    const auto& [tx] = t;
                                    return std::make_pair(log1p(exp(x)), tx * logistic(x));
                                  },
                                  "softplus");
const auto kFloorSte = custom_jvp([](const Array& x) { return floor(x); },
                                  [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                    return std::make_pair(floor(std::get<0>(p)), std::get<0>(t));
                                  },
                                  "floor_ste");
const auto kMulJvp =
    custom_jvp([](const Array& x, const Array& y) { return x * y; },
               [](const std::tuple<Array, Array>& p, const std::tuple<Array, Array>& t) {
                 const auto& [x, y] = p;
                 const auto& [tx, ty] = t;
                 return std::make_pair(x * y, tx * y + x * ty);
               },
               "mul_jvp");

Step d_custom_jvp(Gen& g) {
  int kind = g.r.below(3);
  if (kind == 0)
    return mk("softplus_custom_jvp(x)",
              [](const Ctx&, const Array& x, const Ins&) { return kSoftplus(x); });
  if (kind == 1)
    return mk("floor_ste_custom_jvp(x)",
              [](const Ctx&, const Array& x, const Ins&) { return kFloorSte(x); });
  int k = g.input(g.bcast_shape(g.xs()), g.r.coin(0.8) ? g.dt() : g.dtype());
  return mk("mul_custom_jvp(x, " + in_name(k) + ")",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return kMulJvp(x, in[static_cast<size_t>(k)]);
            });
}

// custom_vjp functions: sin saving cos(x), round with a straight-through bwd, and a
// scale whose (Array) factor is a nondiff argument that bwd receives.
const auto kSinVjp =
    custom_vjp([](const Array& x) { return sin(x); },
               [](const Array& x) { return std::make_pair(sin(x), cos(x)); },
               [](const Array& c, const Array& ct) { return std::make_tuple(ct * c); });
const auto kRoundSte =
    custom_vjp([](const Array& x) { return round(x); },
               [](const Array& x) { return std::make_pair(round(x), std::tuple<>()); },
               [](const std::tuple<>&, const Array& ct) { return std::make_tuple(ct); });
const auto kScaleVjp = custom_vjp(
    [](const Array& s, const Array& x) { return x * s; },
    [](const Array& s, const Array& x) { return std::make_pair(x * s, std::tuple<>()); },
    [](const Array& s, const std::tuple<>&, const Array& ct) { return std::make_tuple(ct * s); },
    nondiff_argnums<0>);

Step d_custom_vjp(Gen& g) {
  g.c.custom_vjp = true;
  int kind = g.r.below(3);
  if (kind == 0)
    return mk("sin_custom_vjp(x)",
              [](const Ctx&, const Array& x, const Ins&) { return kSinVjp(x); });
  if (kind == 1)
    return mk("round_ste_custom_vjp(x)",
              [](const Ctx&, const Array& x, const Ins&) { return kRoundSte(x); });
  int k = g.input({}, g.dt());
  return mk("scale_custom_vjp(" + in_name(k) + ", x)",
            [=](const Ctx&, const Array& x, const Ins& in) {
              return kScaleVjp(in[static_cast<size_t>(k)], x);
            });
}

/** A sub-chain of 1-2 drawn steps for a composite to wrap. Each inner step is drawn
 *  against x as it evolves (the oracle and the shadow run advance through the inner
 *  steps), then x rewinds: the composite itself is applied by generate. */
struct Chain {
  std::vector<Step> steps;
  std::string text;
  std::vector<std::string> ops;
};
Chain sub_chain(Gen& g) {
  Array x0 = g.x, sx0 = g.sx;
  std::optional<PartitionSpec> xspec0 = g.xspec;
  bool ok0 = g.shadow_ok;
  ++g.depth;
  Chain ch;
  int n = g.r.coin(0.5) ? 1 : 2;
  bool unreduced = false;
  for (int k = 0; k < n; ++k) {
    Step s = g.draw_step(g.pick_op());
    unreduced = g.unreduced;
    ch.text += (k ? "; x = " : "x = ") + s.text;
    ch.ops.push_back(s.op);
    ch.ops.insert(ch.ops.end(), s.inner.begin(), s.inner.end());
    ch.steps.push_back(std::move(s));
    if (k + 1 < n) try {
        g.advance(ch.steps.back());
      } catch (...) {
        break;  // the oracle refuses the inner chain: so will the composite
      }
  }
  --g.depth;
  g.x = x0;
  g.sx = sx0;
  g.xspec = xspec0;
  g.shadow_ok = ok0;
  g.unreduced = unreduced;
  return ch;
}

Array run_chain(const std::vector<Step>& steps, const Ctx& c, const Array& x, const Ins& in) {
  Array y = x;
  for (const auto& s : steps) y = s.fn(c, y, in);
  return y;
}

Step composite(std::string text, const Chain& ch, OpFn fn) {
  Step s = mk(std::move(text) + "{" + ch.text + "}(x)", std::move(fn));
  s.inner = ch.ops;
  return s;
}

/** checkpoint (remat) around a drawn sub-chain, a function of x and the inputs. */
Step d_checkpoint(Gen& g) {
  Chain ch = sub_chain(g);
  return composite("checkpoint", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    return checkpoint([st, c](const Array& y, const Ins& ins) { return run_chain(st, c, y, ins); },
                      "chain")(x, in);
  });
}
/** A nested jit around a drawn sub-chain. */
Step d_jit(Gen& g) {
  Chain ch = sub_chain(g);
  return composite("jit", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    return jit([st, c](const Array& y, const Ins& ins) { return run_chain(st, c, y, ins); })(x, in);
  });
}
/** A sub-chain drawn for one example x[0] (vmap and map apply it per slice). */
Chain example_chain(Gen& g) {
  Array x0 = g.x, sx0 = g.sx;
  std::optional<PartitionSpec> xspec0 = g.xspec;
  bool ok0 = g.shadow_ok;
  g.x = tsr::index(x0, {0});
  if (g.shadow_ok && g.sx.valid()) try {
      // One example of the shadow, laid out as vmap's body sees it.
      g.sx = tsr::index(reshard(g.sx, P()), {0});
    } catch (const tsr::Error&) {
      g.shadow_ok = false;
    }
  if (g.xspec) {
    std::vector<PartitionEntry> e = g.xspec->entries();
    if (!e.empty()) e.erase(e.begin());
    g.xspec = PartitionSpec(e);
  }
  Chain ch = sub_chain(g);
  g.x = x0;
  g.sx = sx0;
  g.xspec = xspec0;
  g.shadow_ok = ok0;
  return ch;
}
/** vmap over x's leading dimension of a sub-chain drawn for one example (x[0]); the
 *  inputs are unbatched. A scalar x gets a nested jit instead. */
Step d_vmap(Gen& g) {
  if (g.rank() == 0 || g.xs()[0] == 0) return d_jit(g);
  Chain ch = example_chain(g);
  return composite("vmap", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    auto f = [st, c](const Array& y, const Ins& ins) { return run_chain(st, c, y, ins); };
    return vmap(f, {.in_axes = {0, none}})(x, in);
  });
}
/** custom_jvp around a drawn sub-chain whose rule is jvp of the sub-chain (nested AD). */
Step d_custom_jvp_chain(Gen& g) {
  Chain ch = sub_chain(g);
  return composite("custom_jvp", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    auto f = [st, c](const Array& y, const Ins& ins) { return run_chain(st, c, y, ins); };
    auto cj = custom_jvp(
        f,
        [f](const std::tuple<Array, Ins>& p, const std::tuple<Array, Ins>& t) {
          return tsr::jvp(f, p, t);
        },
        "chain_jvp");
    return cj(x, in);
  });
}
/** custom_vjp around a drawn sub-chain: fwd saves the arguments, bwd is vjp of the
 *  sub-chain at them (recomputing it, as checkpoint would). */
Step d_custom_vjp_chain(Gen& g) {
  g.c.custom_vjp = true;
  Chain ch = sub_chain(g);
  return composite("custom_vjp", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    using Res = std::tuple<Array, Ins>;
    auto f = [st, c](const Array& y, const Ins& ins) { return run_chain(st, c, y, ins); };
    auto cv = custom_vjp(
        f, [f](const Array& y, const Ins& ins) { return std::make_pair(f(y, ins), Res(y, ins)); },
        [f](const Res& r, const Array& ct) {
          return tsr::vjp(f, std::get<0>(r), std::get<1>(r)).second(ct);
        });
    return cv(x, in);
  });
}
/** cond on a predicate computed from x: the sub-chain, or the sub-chain with its
 *  derivative stopped (equal types; the derivative tells which branch ran). */
Step d_cond(Gen& g) {
  Chain ch = sub_chain(g);
  return composite("cond", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    auto f = [st, c](const Array& y, const Ins& ins) { return run_chain(st, c, y, ins); };
    auto h = [f](const Array& y, const Ins& ins) { return stop_gradient(f(y, ins)); };
    return cond(sum(astype(x, float32)) > 0.0, f, h, x, in);
  });
}
/** lax.map (a scan) over x's leading dimension of a sub-chain drawn for x[0]. */
Step d_map(Gen& g) {
  if (g.rank() == 0 || g.xs()[0] == 0) return d_cond(g);
  Chain ch = example_chain(g);
  return composite("map", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    return tsr::map([st, c, in](const Array& y) { return run_chain(st, c, y, in); }, x);
  });
}
/** fori_loop of two steps of a sub-chain (refused alike when it changes x's type). */
Step d_fori(Gen& g) {
  Chain ch = sub_chain(g);
  return composite("fori_loop", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    return fori_loop(
        0, 2, [&](const Array&, const Array& y) { return run_chain(st, c, y, in); }, x);
  });
}
/** while_loop over (counter, x) applying the sub-chain twice (forward-mode only: the
 *  derivative check's vjp is refused alike by the oracle). */
Step d_while(Gen& g) {
  Chain ch = sub_chain(g);
  return composite("while_loop", ch, [st = ch.steps](const Ctx& c, const Array& x, const Ins& in) {
    using C = std::pair<Array, Array>;
    return while_loop([](const C& k) { return k.first < 2; },
                      [&](const C& k) { return C(k.first + 1, run_chain(st, c, k.second, in)); },
                      C(full({}, 0.0, int32), x))
        .second;
  });
}

#define UN(f)                                                                                     \
  {                                                                                               \
#f, 1, false, false, [](Gen&) { return unary(#f, [](const Array& x) { return tsr::f(x); }); } \
  }
#define UNL(f)                                                                                   \
  {                                                                                              \
#f, 1, false, true, [](Gen&) { return unary(#f, [](const Array& x) { return tsr::f(x); }); } \
  }
#define BIN(f, lin)                                                                            \
  {                                                                                            \
#f, 2, false, lin,                                                                         \
        [](Gen &                                                                               \
           g) { return binary(g, #f, [](const AL& a, const AL& b) { return tsr::f(a, b); }); } \
  }
#define RED(f, os, dt, lin)                                               \
  {                                                                       \
#f, 1, true, lin, [](Gen & g) { return reduce(g, #f, f##_, os, dt); } \
  }
#define CUM(f, ro, lin)                                               \
  {                                                                   \
#f, 1, ro, lin, [](Gen & g) { return cumulative(g, #f, tsr::f); } \
  }

}  // namespace

SubChain draw_sub_chain(Gen& g, bool example) {
  Chain ch = example ? example_chain(g) : sub_chain(g);
  return SubChain{ch.steps, ch.text, ch.ops};
}
Array apply_chain(const std::vector<Step>& steps, const Ctx& c, const Array& x, const Ins& in) {
  return run_chain(steps, c, x, in);
}
Step composite_step(std::string text, const SubChain& ch, OpFn fn) {
  return composite(std::move(text), Chain{ch.steps, ch.text, ch.ops}, std::move(fn));
}

const std::vector<OpDef>& vocabulary() {
  // name, arity, reorders (float rounding may differ when sharded), linear, draw
  static const std::vector<OpDef> v = {
      UNL(neg),
      UN(abs),
      UN(sign),
      UN(floor),
      UN(ceil),
      UN(round),
      UN(exp),
      UN(exp2),
      UN(log),
      UN(log1p),
      UN(expm1),
      UN(sqrt),
      UN(rsqrt),
      UN(square),
      UN(sin),
      UN(cos),
      UN(tan),
      UN(tanh),
      UN(logistic),
      UN(erf),
      UN(isfinite),
      UN(logical_not),
      UN(erfinv),
      {"integer_pow", 1, false, false, d_integer_pow},
      {"astype", 1, false, false, d_astype},
      {"bitcast_convert_type", 1, false, false, d_bitcast},
      {"view", 1, false, false, d_view},
      {"convert_element_type", 1, false, true, d_convert},
      {"nan_to_num", 1, false, false, d_nan_to_num},
      BIN(add, true),
      BIN(subtract, true),
      BIN(multiply, true),
      BIN(divide, true),
      BIN(rem, false),
      BIN(power, false),
      BIN(maximum, false),
      BIN(minimum, false),
      BIN(atan2, false),
      BIN(logical_and, false),
      BIN(logical_or, false),
      BIN(logical_xor, false),
      BIN(bitwise_and, false),
      BIN(bitwise_or, false),
      BIN(bitwise_xor, false),
      BIN(equal, false),
      BIN(not_equal, false),
      BIN(less, false),
      BIN(less_equal, false),
      BIN(greater, false),
      BIN(greater_equal, false),
      {"isclose", 2, false, false, d_isclose},
      {"where", 3, false, true, d_where},
      {"select_n", 3, false, true, d_select_n},
      {"clamp", 3, false, false, d_clamp},
      {"clip", 3, false, false, d_clip},
      RED(sum, true, true, true),
      RED(prod, false, true, false),
      RED(max, true, false, false),
      RED(min, true, false, false),
      RED(mean, false, false, false),
      RED(var, false, false, false),
      RED(any, false, false, false),
      RED(all, false, false, false),
      {"argmax/argmin", 1, false, false, d_argmax},
      {"logsumexp", 1, true, false, d_logsumexp},
      {"softmax", 1, true, false, d_softmax},
      CUM(cumsum, false, true),
      CUM(cumprod, false, false),
      CUM(cummax, false, false),
      CUM(cummin, false, false),
      CUM(cumlogsumexp, false, false),
      {"associative_scan", 1, false, false, d_associative_scan},
      {"dot_general", 2, true, true, d_dot_general},
      {"dot_unreduced", 2, true, false, d_dot_unreduced},
      {"matmul/dot", 2, true, false, d_matmul},
      {"outer/kron", 2, false, false, d_outer},
      {"reshape", 1, false, true, d_reshape},
      {"transpose", 1, false, true, d_transpose},
      {"squeeze", 1, false, true, d_squeeze},
      {"expand_dims", 1, false, true, d_expand_dims},
      {"broadcast_to", 1, false, false, d_broadcast_to},
      {"slice", 1, false, true, d_slice},
      {"dynamic_slice", 1, false, false, d_dynamic_slice},
      {"dynamic_update_slice", 2, false, false, d_dynamic_update_slice},
      {"pad", 1, false, true, d_pad},
      {"concatenate/stack", 2, false, false, d_concatenate},
      {"split", 1, false, false, d_split},
      {"rev/flip", 1, false, true, d_rev},
      {"roll", 1, false, false, d_roll},
      {"tile", 1, false, false, d_tile},
      {"repeat", 1, false, false, d_repeat},
      {"triu/tril", 1, false, false, d_triu},
      {"diagonal/trace", 1, false, false, d_diagonal},
      {"swapaxes/moveaxis", 1, false, true, d_swapaxes},
      {"ravel", 1, false, false, d_ravel},
      {"unstack", 1, false, false, d_unstack},
      {"reshard/device_put", 1, false, true, d_reshard},
      {"with_sharding_constraint", 1, false, false, d_wsc},
      {"getitem", 1, false, false, d_getitem},
      {"gather(.at.get)", 2, false, false, d_gather_index},
      {"scatter(.at.set/add/..)", 3, false, false, d_scatter},
      {"take", 2, false, false, d_take},
      {"take_along_axis", 2, false, false, d_take_along},
      {"one_hot", 1, false, false, d_one_hot},
      {"sort/argsort", 1, false, false, d_sort},
      {"top_k", 1, false, false, d_top_k},
      {"searchsorted", 2, false, false, d_searchsorted},
      {"linalg", 1, true, false, d_linalg},
      {"reduce_window", 1, false, false, d_window},
      {"conv_general_dilated", 1, false, false, d_conv},
      {"complex", 1, false, false, d_complex},
      {"fft", 1, false, false, d_fft},
      {"zeros/ones/full/iota", 0, false, false, d_full},
      {"arange/linspace/eye", 0, false, false, d_arange},
      {"broadcasted_iota", 0, false, false, d_broadcasted_iota},
      {"*_like", 1, false, false, d_like},
      {"random", 0, false, false, d_random},
      {"random.permutation", 1, false, false, d_permutation},
      {"stop_gradient", 1, false, true, d_stop_gradient},
      {"custom_jvp", 2, false, false, d_custom_jvp},
      {"custom_vjp", 2, false, false, d_custom_vjp},
      {"checkpoint", 1, false, false, d_checkpoint},
      {"jit", 1, false, false, d_jit},
      {"custom_jvp(chain)", 1, false, false, d_custom_jvp_chain},
      {"custom_vjp(chain)", 1, false, false, d_custom_vjp_chain},
      {"vmap(chain)", 1, false, false, d_vmap},
      {"vmap_collective_ad", 2, true, false, d_vmap_collective_ad},
      {"shard_map", 2, false, false, d_shard_map},
      {"shard_map@auto", 2, false, false, d_auto_shard_map},
      {"cond", 1, false, false, d_cond},
      {"map(chain)", 1, false, false, d_map},
      {"fori_loop(chain)", 1, false, false, d_fori},
      {"while_loop(chain)", 1, false, false, d_while},
      {"reduced_operand", 2, false, false, d_reduced_operand},
      {"reshard_reduced", 1, false, true, d_reshard_reduced},
      {"jacrev(chain)", 1, true, false, d_jacobian},
      {"checkpoint(cond)", 1, false, false, d_checkpoint_cond},
      {"scan(checkpoint)", 1, false, false, d_scan_checkpoint},
  };
  return v;
}

}  // namespace fuzz
