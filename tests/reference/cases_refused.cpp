// Programs the differential fuzzer found refused where JAX runs (issue 23, items 18-22);
// twins in cases_refused.py.
#include "ref.h"

using namespace tsr;

namespace {
Array ramp(const Shape& s) { return iota(s) * 0.25 - 0.5; }

Array cond_of(const Array& x) {
  return cond(
      sum(x) > 0.0, [](const Array& y) { return y * 2.0; }, [](const Array& y) { return y - 1.0; },
      x);
}
}  // namespace

// ---- item 18: grad(checkpoint(f)) through a cond used nonlinearly ----------------------

REF_CASE(refused_ckpt_cond_sin) {
  auto f = [](const Array& x) { return sum(sin(cond_of(x))); };
  return {grad(checkpoint(f))(ramp({2, 3}))};
}

REF_CASE(refused_ckpt_cond_abs) {
  auto f = [](const Array& x) { return abs(sum(cond_of(x))); };
  return {grad(checkpoint(f))(ramp({2, 3}))};
}

REF_CASE(refused_ckpt_two_conds) {
  auto f = [](const Array& x) { return sum(square(cond_of(cond_of(x)))); };
  return {jit(grad(checkpoint(f)))(ramp({2, 3}))};
}

REF_CASE(refused_scan_ckpt_cond) {
  auto body = [](const Array& carry, const Array& xi) {
    Array y = sin(cond(
        xi > 0.0, [](const Array& a) { return a * 2.0; }, [](const Array& a) { return a * a; },
        carry));
    return std::make_pair(y, sum(abs(y)));
  };
  auto loss = [&](const Array& x) {
    auto [c, ys] = scan(checkpoint(body), index(x, {0}), index(x, {all, 0}));
    return sum(c) + sum(ys);
  };
  return {grad(loss)(ramp({4, 3}))};
}

// ---- item 19: an input reduced over an axis another operand is sharded on --------------

REF_CASE(refused_mul_sharded_by_reduced) {
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array x = device_put(ramp({8, 3}), P("a", nullptr));
  Array w = reshard(ones({1, 3}), P(nullptr, nullptr, Reduced{{"a"}}));
  return {x * w};
}

REF_CASE(refused_add_sharded_by_reduced_jit) {
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array x = device_put(ramp({8, 3}), P("a", nullptr));
  Array w = reshard(ones({8, 3}), P(nullptr, nullptr, Reduced{{"a"}}));
  return {jit([](const Array& x, const Array& w) { return x + w; })(x, w)};
}

REF_CASE(refused_reduced_two_sets) {
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array u = reshard(ramp({4}), P(nullptr, Reduced{{"a"}}));
  Array v = reshard(ramp({4}), P(nullptr, Reduced{{"b"}}));
  return {u * v};
}

REF_CASE(refused_dot_sharded_reduced) {
  // dot_general propagates no reduced set (JAX's _dot_general_ur_rule): it runs.
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array v = device_put(ramp({8}), P("a"));
  Array u = reshard(ramp({8}) + 1.0, P(nullptr, Reduced{{"a"}}));
  return {dot(v, u)};
}

REF_CASE(refused_dot_sharded_reduced_grad) {
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array v = device_put(ramp({8}), P("a"));
  Array u = reshard(ramp({8}) + 1.0, P(nullptr, Reduced{{"a"}}));
  return {grad([&](const Array& v) { return dot(v, u); })(v)};
}

// ---- item 20: jacrev at a reduced input --------------------------------------------------

REF_CASE(refused_jacrev_abs_reduced) {
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array x = reshard(ramp({3}), P(nullptr, Reduced{{"a"}}));
  return {jacrev([](const Array& x) { return abs(x); })(x)};
}

// ---- item 21: a factor reduced on other axes than the other is unreduced on -----------

REF_CASE(refused_mul_reduced_other_axes) {
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array sv = reshard(ramp({4}), P(nullptr, Reduced{{"b"}}));
  Array u = reshard(ramp({4}) + 1.0, P(nullptr, Unreduced{{"a"}}));
  return {jit([](const Array& s, const Array& u) { return reshard(s * u, P()); })(sv, u)};
}

REF_CASE(refused_mul_reduced_same_axes_grad) {
  // The other factor reduced on exactly the unreduced axes (JAX's rule): the gradient
  // w.r.t. it is unreduced there.
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array sv = reshard(ramp({4}), P(nullptr, Reduced{{"a"}}));
  Array u = reshard(ramp({4}) + 1.0, P(nullptr, Unreduced{{"a"}}));
  auto step = [](const Array& s, const Array& u) {
    auto [out, g] = value_and_grad([&](const Array& s) { return sum(reshard(s * u, P())); })(s);
    return std::make_pair(out, reshard(g, P()));
  };
  auto [out, g] = jit(step)(sv, u);
  return {out, g};
}

// ---- item 22: keepdims with an out_sharding -------------------------------------------

REF_CASE(refused_sum_keepdims_out_sharding) {
  // out_sharding is the kept-dims result's (the kept dim unsharded).
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array x = device_put(ramp({4, 2}), P("a", "b"));
  return {sum(x, 0, {.keepdims = true, .out_sharding = P(nullptr, "b")})};
}

REF_CASE(refused_sum_keepdims_unreduced) {
  Mesh m = ref::mesh({2, 2}, {"a", "b"});
  MeshScope s(m);
  Array x = device_put(ramp({4, 2}), P("a", "b"));
  auto f = [](const Array& x) {
    Array r = sum(x, 0, {.keepdims = true, .out_sharding = P(nullptr, "b", Unreduced{{"a"}})});
    return reshard(r, P(nullptr, "b"));
  };
  return {jit(f)(x)};
}
