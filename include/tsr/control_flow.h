#pragma once
/** Control flow with shardings (JAX's lax.cond / switch / while_loop / fori_loop /
 *  scan / map). Bodies are traced once into sub-programs of one equation; the loop
 *  runs on the devices (no return to the host per iteration), eagerly and under jit,
 *  and every transform composes with it: jvp/linearize of all of them, grad/vjp of
 *  cond, scan and fori_loop with static bounds (while_loop is forward-mode only, as in
 *  JAX), vmap (a batched predicate turns cond into a select and while_loop into a
 *  masked loop).
 *
 *    Array y = cond(x.sum() > 0, [](const Array& a) { return a * 2; },
 *                   [](const Array& a) { return -a; }, x);
 *    auto [c, ys] = scan([](const Array& c, const Array& x) {
 *      return std::pair{c + x, c * x}; }, init, xs);
 *    Array z = fori_loop(0, 1000, [](const Array& i, const Array& x) {
 *      return x * 0.999f + 1; }, x);
 *
 *  Types must match exactly, sharding and varying manual axes included: branch
 *  outputs, and the carry in and out of a loop (spec §12.16, manual-spmd §3.4). Reading
 *  a traced value to branch in C++ (`x.item<bool>()` under jit) is an error naming
 *  these functions. */
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/ad_core.h"
#include "tsr/array.h"
#include "tsr/ops.h"
#include "tsr/tree.h"
#include "tsr/vmap.h"

namespace tsr {

/** Options of scan. */
struct ScanOptions {
  /** The trip count; required when xs has no leaves, else must equal their dim 0. */
  std::optional<int64_t> length = {};
  /** Iterate from the last slice to the first (ys keep their positions). */
  bool reverse = false;
  /** Accepted for JAX compatibility; the loop runs on the devices either way. */
  int unroll = 1;
};

/** Options of map. */
struct MapOptions {
  /** Examples per iteration, run as one vmapped call (0: one at a time). */
  int64_t batch_size = 0;
};

namespace detail {

/** switch over flat leaves: traces every branch at the operands' types (`check` runs
 *  after tracing, to compare the branches' result structures) and binds one cond. */
std::vector<Array> switch_flat(const Array& index, const std::vector<FlatFn>& branches,
                               const std::vector<Array>& ops, const char* api,
                               const std::function<void()>& check);
/** while_loop over flat carry leaves. */
std::vector<Array> while_flat(const FlatFn& cond, const FlatFn& body,
                              const std::vector<Array>& init);
/** scan over flat leaves: body(carry ++ x slices) -> (carry ++ y slices); returns
 *  carry ++ stacked ys. `n_carry_out()` is read after tracing. */
std::vector<Array> scan_flat(const FlatFn& body, const std::vector<Array>& init,
                             const std::vector<Array>& xs, const ScanOptions& o,
                             const std::function<size_t()>& n_carry_out);
/** The i32 branch index of a cond predicate (bool or number scalar: nonzero is true). */
Array cond_index(const Array& pred);
/** The clamped i32 index of switch (integer scalar). */
Array switch_index(const Array& index, size_t n);
/** map's check: every leaf unsharded along dim 0 (spec §12.16's text for lax.map). */
void check_map_leaves(const std::vector<Array>& leaves);
/** x[from:to] along dim 0. */
Array leading_slice(const Array& x, int64_t from, int64_t to);
/** Raises the structure mismatch between branches or carries. */
void check_same_structure(const tree::Structure& a, const tree::Structure& b, const char* api,
                          const std::string& what);

template <class F, class Tup>
struct BranchCall {
  const F& f;
  const tree::Structure& in;
  std::optional<tree::Structure> out;
  FlatFn fn() {
    return [this](const std::vector<Array>& l) {
      auto [rl, rst] = tree::flatten(std::apply(f, tree::unflatten<Tup>(in, l)));
      out = rst;
      return rl;
    };
  }
};

}  // namespace detail

/** lax.switch: branches[clamp(index, 0, n-1)](operands...). Every branch takes the
 *  same operands (any trees) and returns the same tree of equal types. */
template <class F, class... Ops>
auto switch_case(const Array& index, const std::vector<F>& branches, const Ops&... ops) {
  using Tup = std::tuple<Ops...>;
  using R = std::decay_t<decltype(branches.at(0)(ops...))>;
  Tup tup(ops...);
  auto [leaves, st] = tree::flatten(tup);
  std::vector<detail::BranchCall<F, Tup>> calls;
  calls.reserve(branches.size());
  for (const auto& b : branches) calls.push_back({b, st, {}});
  std::vector<detail::FlatFn> fns;
  for (auto& c : calls) fns.push_back(c.fn());
  auto check = [&] {
    for (size_t b = 1; b < calls.size(); ++b)
      detail::check_same_structure(*calls[0].out, *calls[b].out, "switch_case",
                                   "branch 0 and branch " + std::to_string(b) + " outputs");
  };
  std::vector<Array> r = detail::switch_flat(detail::switch_index(index, branches.size()), fns,
                                             leaves, "switch_case", check);
  return tree::unflatten<R>(*calls[0].out, r);
}

/** lax.cond: true_fn(operands...) when pred (a bool or number scalar) is nonzero,
 *  else false_fn(operands...). Both branches are traced; only one runs. */
template <class T, class F, class... Ops>
auto cond(const Array& pred, const T& true_fn, const F& false_fn, const Ops&... ops) {
  using Tup = std::tuple<Ops...>;
  using R = std::decay_t<decltype(true_fn(ops...))>;
  Tup tup(ops...);
  auto [leaves, st] = tree::flatten(tup);
  detail::BranchCall<F, Tup> f{false_fn, st, {}};
  detail::BranchCall<T, Tup> t{true_fn, st, {}};
  auto check = [&] {
    detail::check_same_structure(*t.out, *f.out, "cond", "true_fun and false_fun output");
  };
  std::vector<Array> r =
      detail::switch_flat(detail::cond_index(pred), {f.fn(), t.fn()}, leaves, "cond", check);
  return tree::unflatten<R>(*t.out, r);
}

/** lax.while_loop: while cond_fn(carry): carry = body_fn(carry). cond_fn returns a
 *  bool scalar; body_fn returns the carry's tree with equal types. Forward-mode
 *  differentiable only. */
template <class C, class B, class T>
T while_loop(const C& cond_fn, const B& body_fn, const T& init) {
  auto [leaves, st] = tree::flatten(init);
  tree::Structure in = st;
  detail::FlatFn c = [&](const std::vector<Array>& l) {
    return std::vector<Array>{cond_fn(tree::unflatten<T>(in, l))};
  };
  detail::FlatFn b = [&](const std::vector<Array>& l) {
    auto [rl, rst] = tree::flatten(static_cast<T>(body_fn(tree::unflatten<T>(in, l))));
    detail::check_same_structure(in, rst, "while_loop", "body_fun output and input");
    return rl;
  };
  return tree::unflatten<T>(in, detail::while_flat(c, b, leaves));
}

/** lax.scan: f(carry, x) -> (carry, y) over the slices of xs along dim 0; returns
 *  (final carry, ys stacked). xs may be any tree (std::tuple<>{} for none: give
 *  .length). The carry keeps its type, sharding included; xs' dim 0 is unsharded. */
template <class F, class C, class X>
auto scan(const F& f, const C& init, const X& xs, ScanOptions o = {}) {
  using R = std::decay_t<decltype(f(init, xs))>;
  using Y = std::decay_t<std::tuple_element_t<1, R>>;
  auto [cl, cst] = tree::flatten(init);
  auto [xl, xst] = tree::flatten(xs);
  const size_t nk = cl.size();
  std::optional<tree::Structure> yst, cout;
  detail::FlatFn body = [&](const std::vector<Array>& l) {
    std::vector<Array> c(l.begin(), l.begin() + static_cast<long>(nk));
    std::vector<Array> x(l.begin() + static_cast<long>(nk), l.end());
    R r = f(tree::unflatten<C>(cst, c), tree::unflatten<X>(xst, x));
    auto [rc, rcs] = tree::flatten(static_cast<C>(std::get<0>(r)));
    auto [ry, rys] = tree::flatten(static_cast<Y>(std::get<1>(r)));
    detail::check_same_structure(cst, rcs, "scan", "body function carry output and input");
    yst = rys;
    rc.insert(rc.end(), ry.begin(), ry.end());
    return rc;
  };
  std::vector<Array> r = detail::scan_flat(body, cl, xl, o, [nk] { return nk; });
  std::vector<Array> c(r.begin(), r.begin() + static_cast<long>(nk));
  std::vector<Array> y(r.begin() + static_cast<long>(nk), r.end());
  return std::pair<C, Y>(tree::unflatten<C>(cst, c), tree::unflatten<Y>(*yst, y));
}

/** lax.fori_loop with static bounds: body(i, carry) -> carry for i in [lower, upper)
 *  (an i32 scalar i). A scan underneath: reverse-mode differentiable. */
template <class B, class T>
T fori_loop(int64_t lower, int64_t upper, const B& body, const T& init) {
  using P = std::pair<Array, T>;
  auto step = [&](const P& c, const std::tuple<>&) {
    return std::pair<P, std::tuple<>>(P(c.first + 1, static_cast<T>(body(c.first, c.second))),
                                      std::tuple<>{});
  };
  P start(full({}, static_cast<double>(lower), int32), init);
  ScanOptions o;
  o.length = std::max<int64_t>(upper - lower, 0);
  return scan(step, start, std::tuple<>{}, o).first.second;
}

/** lax.fori_loop with traced (Array) bounds: a while_loop (forward-mode only). */
template <class B, class T>
T fori_loop(const Array& lower, const Array& upper, const B& body, const T& init) {
  using S = std::tuple<Array, Array, T>;
  S start(astype(lower, int32), astype(upper, int32), init);
  S end = while_loop([](const S& s) { return std::get<0>(s) < std::get<1>(s); },
                     [&](const S& s) {
                       return S(std::get<0>(s) + 1, std::get<1>(s),
                                static_cast<T>(body(std::get<0>(s), std::get<2>(s))));
                     },
                     start);
  return std::get<2>(end);
}

/** lax.map: f applied to each slice of xs along dim 0 (a scan with no carry), ys
 *  stacked. With batch_size, slices run in vmapped groups of that size. */
template <class F, class X>
auto map(const F& f, const X& xs, MapOptions o = {}) {
  using Y = std::decay_t<decltype(f(xs))>;
  auto step = [&](const std::tuple<>&, const X& x) {
    return std::pair<std::tuple<>, Y>(std::tuple<>{}, f(x));
  };
  auto [xl, xst] = tree::flatten(xs);
  detail::check_map_leaves(xl);
  if (o.batch_size <= 0) return scan(step, std::tuple<>{}, xs).second;
  const int64_t n = xl.empty() ? 0 : xl[0].shape()[0];
  const int64_t bs = o.batch_size, full_n = n / bs * bs;
  std::vector<Array> head, tail;
  for (const auto& x : xl) {
    Shape s = x.shape();
    Shape hs = s;
    hs[0] = bs;
    hs.insert(hs.begin(), n / bs);
    head.push_back(reshape(detail::leading_slice(x, 0, full_n), hs));
    tail.push_back(detail::leading_slice(x, full_n, n));
  }
  auto vf = vmap(f);
  auto bstep = [&](const std::tuple<>&, const X& x) {
    return std::pair<std::tuple<>, Y>(std::tuple<>{}, vf(x));
  };
  auto [yl, yst] = tree::flatten(scan(bstep, std::tuple<>{}, tree::unflatten<X>(xst, head)).second);
  std::vector<Array> tl;
  if (n > full_n) tl = tree::flatten(vf(tree::unflatten<X>(xst, tail))).first;
  for (size_t j = 0; j < yl.size(); ++j) {
    Shape s = yl[j].shape();
    Shape m(s.begin() + 1, s.end());
    m[0] = full_n;
    yl[j] = reshape(yl[j], m);
    if (!tl.empty()) yl[j] = concatenate({yl[j], tl[j]}, 0);
  }
  return tree::unflatten<Y>(yst, yl);
}

}  // namespace tsr
