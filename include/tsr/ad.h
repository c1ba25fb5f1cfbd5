#pragma once
/** Automatic differentiation with JAX's names and semantics, over functions of
 *  trees (tsr/tree.h): jvp, linearize, linear_transpose, vjp, grad, value_and_grad,
 *  jacfwd, jacrev, hessian, stop_gradient, custom_jvp, custom_vjp, checkpoint/remat.
 *
 *  Shardings are part of tangent and cotangent types: a tangent has its primal's
 *  type; the cotangent of an input has the input's type with its unreduced and
 *  reduced axes swapped (spec §9), so the gradient of a data-parallel loss has each
 *  weight's own sharding. Every transform traces the function into a Program,
 *  transforms it (jvp, partial_eval, transpose) and evaluates the result: eagerly,
 *  or recorded into an enclosing jit/grad, so they compose in any order.
 *
 *    auto loss = [](const Params& p, const Array& x) { return mean(square(model(p, x))); };
 *    auto [value, g] = value_and_grad(loss)(params, batch);   // g is a Params
 *    auto step = jit(grad(loss, argnums<0>));
 */
#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/ad_core.h"
#include "tsr/array.h"
#include "tsr/tree.h"

namespace tsr {

/** The positional arguments to differentiate: grad(f, argnums<0, 2>). Default <0>. */
template <int... I>
struct Argnums {
  static_assert(sizeof...(I) > 0, "argnums needs at least one argument index");
};
/** argnums<0, 2> selects arguments 0 and 2. */
template <int... I>
inline constexpr Argnums<I...> argnums{};
/** Tag: the function returns (value, aux); aux comes back beside the result. */
struct HasAux {};
/** has_aux, as in JAX. */
inline constexpr HasAux has_aux{};
/** Tag: integer and bool arguments may be selected; their gradients are zeros (JAX
 *  gives float0 zeros; Tessera gives zeros of the argument's dtype). */
struct AllowInt {};
/** allow_int, as in JAX. */
inline constexpr AllowInt allow_int{};
/** Tag: f is holomorphic (complex inputs and output); grad gives f'(z), as JAX's
 *  holomorphic=True. */
struct Holomorphic {};
/** holomorphic, as in JAX. */
inline constexpr Holomorphic holomorphic{};
/** The arguments of a custom_vjp function that bwd receives but that are not
 *  differentiated (JAX's nondiff_argnums). */
template <int... I>
struct NondiffArgnums {};
/** nondiff_argnums<1> for custom_vjp. */
template <int... I>
inline constexpr NondiffArgnums<I...> nondiff_argnums{};

namespace detail {

template <class... O>
struct FindNums {
  using type = Argnums<0>;
};
template <int... I, class... O>
struct FindNums<Argnums<I...>, O...> {
  using type = Argnums<I...>;
};
template <class H, class... O>
struct FindNums<H, O...> : FindNums<O...> {};

template <class... O>
struct FindNondiff {
  using type = NondiffArgnums<>;
};
template <int... I, class... O>
struct FindNondiff<NondiffArgnums<I...>, O...> {
  using type = NondiffArgnums<I...>;
};
template <class H, class... O>
struct FindNondiff<H, O...> : FindNondiff<O...> {};

template <class T>
struct IsTuple : std::false_type {};
template <class... T>
struct IsTuple<std::tuple<T...>> : std::true_type {};

/** Position of K among I..., or -1. */
template <int K, int... I>
constexpr int pos_of() {
  int p = 0, r = -1;
  ((r = (r < 0 && I == K) ? p : r, ++p), ...);
  return r;
}

/** The K-th argument: from `sel` when K is selected, else from `all`. */
template <size_t K, int... I, class All, class Sel>
decltype(auto) pick(const All& all, const Sel& sel) {
  constexpr int p = pos_of<static_cast<int>(K), I...>();
  if constexpr (p >= 0)
    return std::get<static_cast<size_t>(p)>(sel);
  else
    return std::get<K>(all);
}

/** f(args) with the selected arguments replaced by `sel`'s elements. */
template <class F, class All, class Sel, int... I, size_t... K>
decltype(auto) call_with(const F& f, const All& all, const Sel& sel, Argnums<I...>,
                         std::index_sequence<K...>) {
  return f(pick<K, I...>(all, sel)...);
}

/** A single selected argument comes back bare, several as a tuple (as JAX). */
template <class Sel>
auto unwrap_one(Sel&& s) {
  if constexpr (std::tuple_size_v<std::decay_t<Sel>> == 1)
    return std::get<0>(std::forward<Sel>(s));
  else
    return std::forward<Sel>(s);
}

/** The TypeError of a custom_vjp bwd whose result has the wrong number of leaves. */
[[noreturn]] void bwd_structure_error(const std::string& fn, const std::string& got,
                                      size_t want_leaves);
/** f as a function of flat leaves: rebuilds the argument tuple Tup from the leaves,
 *  calls f and flattens its result, remembering the result's structure in `out`. */
template <class F, class Tup>
struct FlatCall {
  const F& f;                         /**< the function */
  const tree::Structure& in;          /**< the argument tuple's structure */
  std::optional<tree::Structure> out; /**< the result's, once called */
  /** The flat function (valid while this object lives). */
  FlatFn fn() {
    return [this](const std::vector<Array>& l) {
      auto [rl, rst] = tree::flatten(std::apply(f, tree::unflatten<Tup>(in, l)));
      out = rst;
      return rl;
    };
  }
};

/** Checks a tree structure given to a derivative function against the expected one. */
void check_structure(const tree::Structure& want, const tree::Structure& got, const char* api,
                     const char* what);

/** value_and_grad's work: value (or (value, aux)) and the gradients of the selected
 *  arguments. */
template <bool Aux, bool Ints, bool Holo, class F, int... I, class... Args>
auto value_and_grad_impl(const F& f, Argnums<I...> nums, const Args&... args) {
  static_assert(((I >= 0 && I < static_cast<int>(sizeof...(Args))) && ...),
                "grad: an argnum is out of range for this call's arguments");
  auto all = std::forward_as_tuple(args...);
  using Sel = std::tuple<std::decay_t<std::tuple_element_t<I, std::tuple<Args...>>>...>;
  Sel sel(std::get<static_cast<size_t>(I)>(all)...);
  auto [leaves, st] = tree::flatten(sel);
  std::vector<std::string> paths = tree::paths(sel, "args");
  for (size_t i = 0; i < leaves.size(); ++i)
    check_grad_input(leaves[i], Ints, "grad", paths[i], Holo);
  using R = std::decay_t<decltype(f(args...))>;
  std::optional<tree::Structure> aux_st;
  size_t naux = 0;
  FlatFn ff = [&](const std::vector<Array>& l) {
    Sel s = tree::unflatten<Sel>(st, l);
    R r = call_with(f, all, s, nums, std::index_sequence_for<Args...>{});
    if constexpr (Aux) {
      static_assert(std::tuple_size_v<R> == 2, "has_aux: the function must return (value, aux)");
      static_assert(std::is_same_v<std::decay_t<std::tuple_element_t<0, R>>, Array>,
                    "grad: the value must be a scalar Array");
      auto [al, ast] = tree::flatten(std::get<1>(r));
      aux_st = ast;
      naux = al.size();
      std::vector<Array> out = {std::get<0>(r)};
      out.insert(out.end(), al.begin(), al.end());
      return out;
    } else {
      static_assert(std::is_same_v<R, Array>,
                    "grad: the function must return a scalar Array (use has_aux for (value, aux))");
      return std::vector<Array>{r};
    }
  };
  auto [outs, map] = vjp_flat(ff, leaves, [&] { return naux; });
  check_grad_output(outs[0], "grad", Holo);
  std::vector<Array> g = (*map)({grad_seed(outs[0])});
  auto grads = unwrap_one(tree::unflatten<Sel>(st, g));
  if constexpr (Aux) {
    using A = std::decay_t<std::tuple_element_t<1, R>>;
    std::vector<Array> al(outs.begin() + 1, outs.end());
    return std::make_pair(std::make_pair(outs[0], tree::unflatten<A>(*aux_st, al)), grads);
  } else {
    return std::make_pair(outs[0], grads);
  }
}

}  // namespace detail

/** The callable value_and_grad returns. */
template <class F, class... Opts>
class ValueAndGradFn {
 public:
  /** Wraps f. */
  explicit ValueAndGradFn(F f) : f_(std::make_shared<F>(std::move(f))) {}
  /** (value, gradients) at args; with has_aux ((value, aux), gradients). */
  template <class... Args>
  auto operator()(const Args&... args) const {
    constexpr bool aux = (std::is_same_v<Opts, HasAux> || ...);
    constexpr bool ints = (std::is_same_v<Opts, AllowInt> || ...);
    constexpr bool holo = (std::is_same_v<Opts, Holomorphic> || ...);
    return detail::value_and_grad_impl<aux, ints, holo>(
        *f_, typename detail::FindNums<Opts...>::type{}, args...);
  }

 private:
  std::shared_ptr<F> f_;
};

/** The callable grad returns. */
template <class F, class... Opts>
class GradFn {
 public:
  /** Wraps f. */
  explicit GradFn(F f) : vg_(std::move(f)) {}
  /** The gradients at args (with has_aux: (gradients, aux)). */
  template <class... Args>
  auto operator()(const Args&... args) const {
    auto r = vg_(args...);
    if constexpr ((std::is_same_v<Opts, HasAux> || ...))
      return std::make_pair(std::move(r.second), std::move(r.first.second));
    else
      return std::move(r.second);
  }

 private:
  ValueAndGradFn<F, Opts...> vg_;
};

/** jax.grad: the gradient of a scalar-output f with respect to argnums (default 0),
 *  with each argument's tree structure. Options: argnums<...>, has_aux, allow_int,
 *  holomorphic. */
template <class F, class... Opts>
GradFn<F, Opts...> grad(F f, Opts...) {
  return GradFn<F, Opts...>(std::move(f));
}

/** jax.value_and_grad: (f(args), grad(f)(args)) from one evaluation. */
template <class F, class... Opts>
ValueAndGradFn<F, Opts...> value_and_grad(F f, Opts...) {
  return ValueAndGradFn<F, Opts...>(std::move(f));
}

/** jax.jvp: (f(primals...), the tangent of the output along `tangents`). primals and
 *  tangents are tuples of f's arguments with equal tree structures; each tangent has
 *  its primal's type (integer and bool arguments take none: pass zeros). */
template <class F, class... Args>
auto jvp(const F& f, const std::tuple<Args...>& primals, const std::tuple<Args...>& tangents) {
  using R = std::decay_t<decltype(std::apply(f, primals))>;
  using Tup = std::tuple<Args...>;
  auto [pl, pst] = tree::flatten(primals);
  auto [tl, tst] = tree::flatten(tangents);
  detail::check_structure(pst, tst, "jvp", "tangents");
  detail::FlatCall<F, Tup> call{f, pst, {}};
  auto [o, t] = detail::jvp_flat(call.fn(), pl, tl);
  return std::make_pair(tree::unflatten<R>(*call.out, o), tree::unflatten<R>(*call.out, t));
}

/** jvp of a function of one Array: jvp(f, x, t). */
template <class F>
auto jvp(const F& f, const Array& primal, const Array& tangent) {
  return jvp(f, std::tuple<Array>(primal), std::tuple<Array>(tangent));
}

/** The linear function linearize returns: tangents of the arguments -> tangent of
 *  the output. A linear Program holding the residuals; call it, print it, jit it,
 *  linear_transpose it. */
template <class R, class... Args>
class LinearizedFn {
 public:
  /** Internal: built by linearize. */
  LinearizedFn(std::shared_ptr<const detail::LinearMap> m, tree::Structure in, tree::Structure out)
      : map_(std::move(m)), in_(std::move(in)), out_(std::move(out)) {}
  /** The output tangent for these argument tangents (each of its primal's type). */
  R operator()(const Args&... tangents) const {
    auto [l, st] = tree::flatten(std::tuple<Args...>(tangents...));
    detail::check_structure(in_, st, "linearize", "tangents");
    return tree::unflatten<R>(out_, (*map_)(l));
  }
  /** The linear program, jaxpr style (residuals are its constants). */
  std::string str() const { return map_->str(); }

 private:
  std::shared_ptr<const detail::LinearMap> map_;
  tree::Structure in_, out_;
};

/** jax.linearize: (f(primals...), f_jvp) where f_jvp maps argument tangents to the
 *  output tangent without redoing the primal computation (jvp + partial_eval). */
template <class F, class... Args>
auto linearize(const F& f, const Args&... primals) {
  using R = std::decay_t<decltype(f(primals...))>;
  using Tup = std::tuple<Args...>;
  auto [pl, pst] = tree::flatten(Tup(primals...));
  detail::FlatCall<F, Tup> call{f, pst, {}};
  auto [o, m] = detail::linearize_flat(call.fn(), pl);
  return std::make_pair(tree::unflatten<R>(*call.out, o),
                        LinearizedFn<R, Args...>(m, pst, *call.out));
}

/** The function vjp returns: a cotangent of the output -> one cotangent per argument
 *  (a tuple, as JAX), each of its argument's cotangent type. */
template <class R, class... Args>
class VjpFn {
 public:
  /** Internal: built by vjp / linear_transpose. */
  VjpFn(std::shared_ptr<const detail::LinearMap> m, tree::Structure in, tree::Structure out,
        const char* api)
      : map_(std::move(m)), in_(std::move(in)), out_(std::move(out)), api_(api) {}
  /** The argument cotangents for an output cotangent `ct`. */
  std::tuple<Args...> operator()(const R& ct) const {
    auto [l, st] = tree::flatten(ct);
    detail::check_structure(out_, st, api_, "cotangent");
    return tree::unflatten<std::tuple<Args...>>(in_, (*map_)(l));
  }
  /** The transposed program, jaxpr style. */
  std::string str() const { return map_->str(); }

 private:
  std::shared_ptr<const detail::LinearMap> map_;
  tree::Structure in_, out_;
  const char* api_;
};

/** jax.vjp: (f(primals...), vjp_fn) where vjp_fn(ct) gives the argument cotangents. */
template <class F, class... Args>
auto vjp(const F& f, const Args&... primals) {
  using R = std::decay_t<decltype(f(primals...))>;
  using Tup = std::tuple<Args...>;
  auto [pl, pst] = tree::flatten(Tup(primals...));
  detail::FlatCall<F, Tup> call{f, pst, {}};
  auto [o, m] = detail::vjp_flat(call.fn(), pl);
  return std::make_pair(tree::unflatten<R>(*call.out, o),
                        VjpFn<R, Args...>(m, pst, *call.out, "vjp"));
}

/** jax.vjp(..., has_aux=True): (value, vjp_fn, aux) for f returning (value, aux). */
template <class F, class... Args>
auto vjp(const F& f, HasAux, const Args&... primals) {
  using RA = std::decay_t<decltype(f(primals...))>;
  static_assert(std::tuple_size_v<RA> == 2, "has_aux: the function must return (value, aux)");
  using R = std::decay_t<std::tuple_element_t<0, RA>>;
  using A = std::decay_t<std::tuple_element_t<1, RA>>;
  using Tup = std::tuple<Args...>;
  auto [pl, pst] = tree::flatten(Tup(primals...));
  std::optional<tree::Structure> out_st, aux_st;
  size_t naux = 0;
  detail::FlatFn ff = [&](const std::vector<Array>& l) {
    auto r = std::apply(f, tree::unflatten<Tup>(pst, l));
    auto [rl, rst] = tree::flatten(std::get<0>(r));
    auto [al, ast] = tree::flatten(std::get<1>(r));
    out_st = rst;
    aux_st = ast;
    naux = al.size();
    rl.insert(rl.end(), al.begin(), al.end());
    return rl;
  };
  auto [o, m] = detail::vjp_flat(ff, pl, [&] { return naux; });
  size_t nv = o.size() - naux;
  std::vector<Array> vl(o.begin(), o.begin() + static_cast<long>(nv)),
      al(o.begin() + static_cast<long>(nv), o.end());
  return std::make_tuple(tree::unflatten<R>(*out_st, vl), VjpFn<R, Args...>(m, pst, *out_st, "vjp"),
                         tree::unflatten<A>(*aux_st, al));
}

/** jax.linear_transpose: the transpose of f, which must be linear in its arguments;
 *  primals give the argument types (their values are not used). */
template <class F, class... Args>
auto linear_transpose(const F& f, const Args&... primals) {
  using R = std::decay_t<decltype(f(primals...))>;
  using Tup = std::tuple<Args...>;
  auto [pl, pst] = tree::flatten(Tup(primals...));
  detail::FlatCall<F, Tup> call{f, pst, {}};
  auto m = detail::linear_transpose_flat(call.fn(), pl);
  return VjpFn<R, Args...>(m, pst, *call.out, "linear_transpose");
}

/** The callable jacfwd / jacrev return. */
template <class F, bool Forward, class... Opts>
class JacobianFn {
 public:
  /** Wraps f. */
  explicit JacobianFn(F f) : f_(std::make_shared<F>(std::move(f))) {}
  /** The Jacobian at args: the selected arguments' structure, each leaf of shape
   *  out.shape + leaf.shape (f must return one Array). */
  template <class... Args>
  auto operator()(const Args&... args) const {
    return run(typename detail::FindNums<Opts...>::type{}, args...);
  }

 private:
  template <int... I, class... Args>
  auto run(Argnums<I...> nums, const Args&... args) const {
    auto all = std::forward_as_tuple(args...);
    using Sel = std::tuple<std::decay_t<std::tuple_element_t<I, std::tuple<Args...>>>...>;
    Sel sel(std::get<static_cast<size_t>(I)>(all)...);
    auto [leaves, st] = tree::flatten(sel);
    using R = std::decay_t<decltype((*f_)(args...))>;
    static_assert(std::is_same_v<R, Array>, "jacfwd/jacrev: the function must return one Array");
    detail::FlatFn ff = [&](const std::vector<Array>& l) {
      Sel s = tree::unflatten<Sel>(st, l);
      return std::vector<Array>{
          detail::call_with(*f_, all, s, nums, std::index_sequence_for<Args...>{})};
    };
    std::vector<Array> j =
        detail::jacobian_flat(ff, leaves, Forward, Forward ? "jacfwd" : "jacrev");
    return detail::unwrap_one(tree::unflatten<Sel>(st, j));
  }
  std::shared_ptr<F> f_;
};

/** jax.jacfwd: the Jacobian by forward mode (vmap of the jvp over the input basis). */
template <class F, class... Opts>
JacobianFn<F, true, Opts...> jacfwd(F f, Opts...) {
  return JacobianFn<F, true, Opts...>(std::move(f));
}
/** jax.jacrev: the Jacobian by reverse mode (vmap of the vjp over the output basis). */
template <class F, class... Opts>
JacobianFn<F, false, Opts...> jacrev(F f, Opts...) {
  return JacobianFn<F, false, Opts...>(std::move(f));
}
/** jax.hessian = jacfwd(jacrev(f)): for a scalar f of one Array argument (per argnums),
 *  shape x.shape + x.shape. */
template <class F, class... Opts>
auto hessian(F f, Opts... o) {
  return jacfwd(jacrev(std::move(f), o...), o...);
}

/** jax.lax.stop_gradient over a tree: the same values, with zero tangents. */
template <class T>
T stop_gradient(const T& t) {
  return tree::map([](const Array& x) { return detail::stop_gradient_leaf(x); }, t);
}

/** A function with a user-defined jvp rule (jax.custom_jvp). rule(primals, tangents)
 *  takes two tuples of the arguments and returns (primal_out, tangent_out). */
template <class F, class Rule>
class CustomJvpFn {
 public:
  /** f and its rule; `name` appears in programs and errors. */
  CustomJvpFn(F f, Rule rule, std::string name)
      : f_(std::make_shared<F>(std::move(f))),
        rule_(std::make_shared<Rule>(std::move(rule))),
        name_(std::move(name)) {}
  /** f(args...); under differentiation the rule gives the tangent. */
  template <class... Args>
  auto operator()(const Args&... args) const {
    using R = std::decay_t<decltype((*f_)(args...))>;
    using Tup = std::tuple<Args...>;
    auto [l, st] = tree::flatten(Tup(args...));
    auto out_st = std::make_shared<std::optional<tree::Structure>>();
    auto f = f_;
    detail::FlatFn ff = [&](const std::vector<Array>& lv) {
      auto [rl, rst] = tree::flatten(std::apply(*f, tree::unflatten<Tup>(st, lv)));
      *out_st = rst;
      return rl;
    };
    auto rule = rule_;
    std::string name = name_;
    auto rule_flat = [rule, st = st, out_st, name](const std::vector<Array>& p,
                                                   const std::vector<Array>& t) {
      auto [po, to] = (*rule)(tree::unflatten<Tup>(st, p), tree::unflatten<Tup>(st, t));
      auto [pl, pst] = tree::flatten(po);
      auto [tl, tst] = tree::flatten(to);
      detail::check_structure(pst, tst, "custom_jvp", "tangent output");
      if (*out_st) detail::check_structure(**out_st, pst, "custom_jvp", "primal output");
      pl.insert(pl.end(), tl.begin(), tl.end());
      return pl;
    };
    std::vector<Array> outs = detail::custom_jvp_call(ff, rule_flat, l, name_);
    return tree::unflatten<R>(**out_st, outs);
  }

 private:
  std::shared_ptr<F> f_;
  std::shared_ptr<Rule> rule_;
  std::string name_;
};

/** jax.custom_jvp: f with the jvp `rule`. */
template <class F, class Rule>
CustomJvpFn<F, Rule> custom_jvp(F f, Rule rule, std::string name = "custom_jvp_fn") {
  return CustomJvpFn<F, Rule>(std::move(f), std::move(rule), std::move(name));
}

/** A function with a user-defined vjp (jax.custom_vjp): fwd(args...) returns
 *  (out, residuals); bwd(nondiff args..., residuals, out_ct) returns a tuple with one
 *  cotangent per differentiated argument (an invalid Array for a zero). */
template <class F, class Fwd, class Bwd, class Nondiff>
class CustomVjpFn;

/** CustomVjpFn whose arguments at positions N... are not differentiated. */
template <class F, class Fwd, class Bwd, int... N>
class CustomVjpFn<F, Fwd, Bwd, NondiffArgnums<N...>> {
 public:
  /** f, its rules, and its name for programs and errors. */
  CustomVjpFn(F f, Fwd fwd, Bwd bwd, std::string name)
      : f_(std::make_shared<F>(std::move(f))),
        fwd_(std::make_shared<Fwd>(std::move(fwd))),
        bwd_(std::make_shared<Bwd>(std::move(bwd))),
        name_(std::move(name)) {}
  /** f(args...); under reverse-mode differentiation bwd gives the cotangents. */
  template <class... Args>
  auto operator()(const Args&... args) const {
    return call(std::index_sequence_for<Args...>{}, args...);
  }

 private:
  static constexpr bool is_nondiff(size_t k) { return ((static_cast<size_t>(N) == k) || ...); }

  template <size_t... K, class... Args>
  auto call(std::index_sequence<K...>, const Args&... args) const {
    using R = std::decay_t<decltype((*f_)(args...))>;
    using Tup = std::tuple<Args...>;
    using FR = std::decay_t<decltype((*fwd_)(args...))>;
    static_assert(std::tuple_size_v<FR> == 2, "custom_vjp: fwd must return (out, residuals)");
    using Res = std::decay_t<std::tuple_element_t<1, FR>>;
    Tup all(args...);
    auto [l, st] = tree::flatten(all);
    // Which leaves belong to which argument (nondiff ones are not differentiated and
    // reach bwd through the residuals, so traced values stay in scope).
    std::vector<size_t> counts = {tree::leaves(std::get<K>(all)).size()...};
    std::vector<bool> diff;
    std::vector<size_t> nondiff_leaves;
    for (size_t k = 0, at = 0; k < counts.size(); ++k)
      for (size_t c = 0; c < counts[k]; ++c, ++at) {
        diff.push_back(!is_nondiff(k));
        if (is_nondiff(k)) nondiff_leaves.push_back(at);
      }
    std::vector<std::string> paths = tree::paths(all);
    auto out_st = std::make_shared<std::optional<tree::Structure>>();
    auto res_st = std::make_shared<std::optional<tree::Structure>>();
    auto f = f_;
    detail::FlatFn ff = [&](const std::vector<Array>& lv) {
      auto [rl, rst] = tree::flatten(std::apply(*f, tree::unflatten<Tup>(st, lv)));
      *out_st = rst;
      return rl;
    };
    auto fwd = fwd_;
    std::string name = name_;
    detail::FlatFn fwd_flat = [fwd, st = st, out_st, res_st, nondiff_leaves,
                               name](const std::vector<Array>& lv) {
      auto [o, r] = std::apply(*fwd, tree::unflatten<Tup>(st, lv));
      auto [ol, ost] = tree::flatten(o);
      auto [rl, rst] = tree::flatten(r);
      if (*out_st) detail::check_structure(**out_st, ost, "custom_vjp", "fwd output");
      *res_st = rst;
      ol.insert(ol.end(), rl.begin(), rl.end());
      for (size_t i : nondiff_leaves) ol.push_back(lv[i]);
      return ol;
    };
    auto bwd = bwd_;
    auto bwd_flat = [bwd, st = st, out_st, res_st, nondiff_leaves, diff, name](
                        const std::vector<Array>& res_all, const std::vector<Array>& cts) {
      size_t nr = res_all.size() - nondiff_leaves.size();
      std::vector<Array> rl(res_all.begin(), res_all.begin() + static_cast<long>(nr));
      // The arguments as the rule saw them: nondiff leaves from the residuals.
      std::vector<Array> lv(diff.size());
      for (size_t i = 0; i < nondiff_leaves.size(); ++i) lv[nondiff_leaves[i]] = res_all[nr + i];
      Tup a = tree::unflatten<Tup>(st, lv);
      Res res = tree::unflatten<Res>(**res_st, rl);
      R ct = tree::unflatten<R>(**out_st, cts);
      auto g = (*bwd)(std::get<static_cast<size_t>(N)>(a)..., res, ct);
      // One cotangent per differentiated argument: bwd returns a tuple (as JAX), or for
      // a single differentiated argument that cotangent itself.
      using G = std::decay_t<decltype(g)>;
      if constexpr (detail::IsTuple<G>::value)
        static_assert(std::tuple_size_v<G> == sizeof...(Args) - sizeof...(N) ||
                          sizeof...(Args) - sizeof...(N) == 1,
                      "custom_vjp: bwd must return a tuple with one cotangent per "
                      "differentiated argument (as JAX)");
      std::vector<Array> gl = tree::leaves(g);
      size_t nd = static_cast<size_t>(std::count(diff.begin(), diff.end(), true));
      if (gl.size() != nd) detail::bwd_structure_error(name, tree::structure(g).str(), nd);
      std::vector<Array> out(diff.size());
      for (size_t i = 0, k = 0; i < diff.size(); ++i)
        if (diff[i]) out[i] = gl[k++];
      return out;
    };
    std::vector<Array> outs =
        detail::custom_vjp_call(ff, fwd_flat, bwd_flat, l, diff, paths, name_);
    return tree::unflatten<R>(**out_st, outs);
  }

  std::shared_ptr<F> f_;
  std::shared_ptr<Fwd> fwd_;
  std::shared_ptr<Bwd> bwd_;
  std::string name_;
};

/** jax.custom_vjp: f with fwd/bwd rules; options: nondiff_argnums<...>. */
template <class F, class Fwd, class Bwd, class... Opts>
auto custom_vjp(F f, Fwd fwd, Bwd bwd, Opts...) {
  using ND = typename detail::FindNondiff<Opts...>::type;
  return CustomVjpFn<F, Fwd, Bwd, ND>(std::move(f), std::move(fwd), std::move(bwd),
                                      "custom_vjp_fn");
}

/** The callable checkpoint returns. */
template <class F>
class CheckpointFn {
 public:
  /** Wraps f. */
  CheckpointFn(F f, std::string name)
      : f_(std::make_shared<F>(std::move(f))), name_(std::move(name)) {}
  /** f(args...); under reverse-mode differentiation its intermediates are recomputed
   *  in the backward pass instead of saved. */
  template <class... Args>
  auto operator()(const Args&... args) const {
    using R = std::decay_t<decltype((*f_)(args...))>;
    using Tup = std::tuple<Args...>;
    auto [l, st] = tree::flatten(Tup(args...));
    detail::FlatCall<F, Tup> call{*f_, st, {}};
    std::vector<Array> outs = detail::checkpoint_call(call.fn(), l, name_);
    return tree::unflatten<R>(*call.out, outs);
  }

 private:
  std::shared_ptr<F> f_;
  std::string name_;
};

/** jax.checkpoint (remat): f, with its intermediates recomputed in the backward pass
 *  (only its inputs are saved): trades compute for memory. */
template <class F>
CheckpointFn<F> checkpoint(F f, std::string name = "checkpoint_fn") {
  return CheckpointFn<F>(std::move(f), std::move(name));
}
/** jax.remat: the same as checkpoint. */
template <class F>
CheckpointFn<F> remat(F f, std::string name = "checkpoint_fn") {
  return CheckpointFn<F>(std::move(f), std::move(name));
}

}  // namespace tsr
