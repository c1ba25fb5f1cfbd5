// Vocabulary for what the fuzzer once found refused where JAX runs (issue 23, items
// 18-22): checkpoint around a cond used nonlinearly, scan(checkpoint(body)), reduced
// operands and values (against sharded and unreduced ones), and Jacobians of sub-chains,
// at reduced points too. The derivative checks (README.md) then run grad/vjp through them.
#include <algorithm>
#include <set>

#include "fuzz.h"

namespace fuzz {

using namespace tsr;

namespace {

Step mk(std::string text, OpFn fn) { return Step{"", std::move(text), std::move(fn), {}}; }

// Mesh axes x's sharded type names in its entries.
std::vector<std::string> sharded_axes(const Gen& g) {
  std::vector<std::string> out;
  if (g.xspec)
    for (const auto& e : g.xspec->entries())
      for (const auto& a : e.axes()) out.push_back(a);
  return out;
}

// A spec with x's layout (dims aligned at the end, as broadcasting) for a value of
// `shape`, reduced over `red` (axes dropped from the entries, so it is a valid type).
PartitionSpec reduced_spec(Gen& g, const Shape& shape, const std::set<std::string>& red) {
  std::vector<PartitionEntry> e = g.operand_spec(shape).entries();
  for (auto& pe : e) {
    const auto& axes = pe.axes();
    if (std::any_of(axes.begin(), axes.end(), [&](const auto& a) { return red.count(a) > 0; }))
      pe = PartitionEntry();  // after the scan: assigning inside it freed the axes it read
  }
  return PartitionSpec(e, {}, red);
}

// Reduced axes for an operand next to x: x's unreduced set (mul's rule), an axis x is
// sharded on (refused: spec §9), or any axis of the mesh.
std::set<std::string> draw_reduced(Gen& g) {
  std::set<std::string> xu = g.xspec ? g.xspec->unreduced() : std::set<std::string>{};
  std::vector<std::string> sh = sharded_axes(g);
  int k = g.r.below(3);
  if (k == 0 && !xu.empty()) return xu;
  if (k == 1 && !sh.empty()) return {g.r.pick(sh)};
  return {g.r.pick(g.mesh().names)};
}

const char* const kNonlinear[] = {"sin", "exp", "tanh", "square", "abs"};

// A nonlinear op whose derivative reads its input (square for non-float values).
Array nonlinear(int k, const Array& x) {
  if (!is_floating(x.dtype())) return x * x;
  switch (k) {
    case 0:
      return sin(x);
    case 1:
      return exp(tanh(x));
    case 2:
      return tanh(x);
    case 3:
      return x * x;
    default:
      return abs(x);
  }
}

}  // namespace

Step d_reduced_operand(Gen& g) {
  Shape s = g.r.coin(0.6) ? g.xs() : g.bcast_shape(g.xs());
  DType dt = is_floating(g.dt()) && g.r.coin(0.8) ? g.dt() : g.float_dtype();
  std::set<std::string> red = draw_reduced(g);
  int k = g.input(s, dt, false);
  g.c.inputs[static_cast<size_t>(k)].spec = reduced_spec(g, s, red);
  static const char* const ops[] = {"*", "+", "-", "maximum", "/"};
  int op = g.r.below(5);
  bool swap = g.r.coin(0.5);
  std::string w = "in" + std::to_string(k);
  std::string a = swap ? w : "x", b = swap ? "x" : w;
  g.unreduced = op == 0 && g.xspec && !g.xspec->unreduced().empty();
  std::string text =
      op == 3 ? std::string("maximum(") + a + ", " + b + ")" : a + " " + ops[op] + " " + b;
  return mk(text, [=](const Ctx&, const Array& x, const Ins& in) {
    const Array& v = in[static_cast<size_t>(k)];
    const Array& l = swap ? v : x;
    const Array& r = swap ? x : v;
    switch (op) {
      case 0:
        return l * r;
      case 1:
        return l + r;
      case 2:
        return l - r;
      case 3:
        return maximum(l, r);
      default:
        return l / r;
    }
  });
}

Step d_reshard_reduced(Gen& g) {
  std::set<std::string> red{g.r.pick(g.mesh().names)};
  std::vector<PartitionEntry> e =
      g.xspec ? g.xspec->entries() : g.spec(g.xs()).normalized(g.rank()).entries();
  for (auto& pe : e) {
    const auto& axes = pe.axes();
    if (std::any_of(axes.begin(), axes.end(), [&](const auto& a) { return red.count(a) > 0; }))
      pe = PartitionEntry();  // after the scan: assigning inside it freed the axes it read
  }
  PartitionSpec p(e, {}, red);
  return mk("reshard(x, " + str(p) + ")",
            [=](const Ctx& c, const Array& x, const Ins&) { return c.oracle ? x : reshard(x, p); });
}

/** jacrev (sometimes jacfwd) of a sub-chain w.r.t. x, at x (sometimes at x resharded
 *  to a reduced layout: the Jacobian is then unreduced over those axes). Small float x
 *  only; otherwise checkpoint(cond). */
Step d_jacobian(Gen& g) {
  if (!is_floating(g.dt()) || numel(g.xs()) > 12 || g.rank() > 2) return d_checkpoint_cond(g);
  bool fwd = g.r.coin(0.25);
  std::optional<PartitionSpec> red;
  if (g.r.coin(0.4)) {
    std::set<std::string> axes{g.r.pick(g.mesh().names)};
    std::vector<PartitionEntry> e =
        g.xspec ? g.xspec->entries() : std::vector<PartitionEntry>(g.xs().size());
    for (auto& pe : e)
      for (const auto& a : pe.axes())
        if (axes.count(a)) pe = PartitionEntry();
    red = PartitionSpec(e, {}, axes);
  }
  SubChain ch = draw_sub_chain(g);
  std::string name = std::string(fwd ? "jacfwd" : "jacrev") + (red ? "@" + str(*red) : "");
  return composite_step(name, ch,
                        [st = ch.steps, fwd, red](const Ctx& c, const Array& x, const Ins& in) {
                          auto f = [&](const Array& y) { return apply_chain(st, c, y, in); };
                          Array at = c.oracle || !red ? x : reshard(x, *red);
                          return fwd ? jacfwd(f)(at) : jacrev(f)(at);
                        });
}

/** checkpoint around a cond (the sub-chain, or it with its derivative stopped) whose
 *  result feeds a nonlinear op, sometimes then a second cond and abs: the backward pass
 *  recomputes the cond's jvp and must evaluate its primal outputs forward. */
Step d_checkpoint_cond(Gen& g) {
  SubChain ch = draw_sub_chain(g);
  int nl = g.r.below(5);
  bool second = g.r.coin(0.3);
  std::string name = std::string("checkpoint(") + kNonlinear[nl] + (second ? ", cond2" : "") + ")";
  return composite_step(
      name, ch, [st = ch.steps, nl, second](const Ctx& c, const Array& x, const Ins& in) {
        auto body = [st, c, nl, second](const Array& y, const Ins& ins) {
          auto f = [st, c](const Array& z, const Ins& i2) { return apply_chain(st, c, z, i2); };
          auto h = [f](const Array& z, const Ins& i2) { return stop_gradient(f(z, i2)); };
          Array r = nonlinear(nl, cond(sum(astype(y, float32)) > 0.0, f, h, y, ins));
          if (!second) return r;
          r = cond(
              sum(astype(r, float32)) < 1.0, [](const Array& z) { return z * 2.0; },
              [](const Array& z) { return z - 1.0; }, r);
          return nonlinear(4, r);
        };
        return checkpoint(body, "cond_chain")(x, in);
      });
}

/** scan over x's leading dim of checkpoint(body): the carry (x[0]'s type) goes through
 *  a cond and a nonlinear op each step, and the sub-chain (drawn for x[0]) makes the ys.
 *  x is resharded unsharded along dim 0 first (scan's xs must be). Float x only. */
Step d_scan_checkpoint(Gen& g) {
  if (g.rank() == 0 || g.xs()[0] == 0 || !is_floating(g.dt())) return d_checkpoint_cond(g);
  std::optional<PartitionSpec> un;
  if (g.xspec) {
    std::vector<PartitionEntry> e = g.xspec->entries();
    if (!e.empty()) e[0] = PartitionEntry();
    un = PartitionSpec(e);
  }
  SubChain ch = draw_sub_chain(g, true);
  int nl = g.r.below(5);
  std::string name = std::string("scan(checkpoint(") + kNonlinear[nl] + "(cond)))";
  return composite_step(
      name, ch, [st = ch.steps, nl, un](const Ctx& c, const Array& x, const Ins& in) {
        Array xs = c.oracle || !un ? x : reshard(x, *un);
        auto body = [st, c, in, nl](const Array& carry, const Array& xi) {
          Array z = carry * 0.5 + xi;
          Array r = nonlinear(
              nl, cond(
                      sum(astype(z, float32)) > 0.0, [](const Array& a) { return a * 2.0; },
                      [](const Array& a) { return a - 1.0; }, z));
          return std::make_pair(r, apply_chain(st, c, r, in));
        };
        return scan(checkpoint(body), index(xs, {0}), xs).second;
      });
}

}  // namespace fuzz
