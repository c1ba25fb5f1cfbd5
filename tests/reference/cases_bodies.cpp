// Types inside shard_map bodies (issue 23, items 6-9; twins in cases_bodies.py):
// constants made in a body as loop carries, a varying predicate around a free pvary,
// the *_like creators keeping the varying axes, and custom_vjp / custom_jvp / jit /
// checkpoint results typed by the function they call.
#include "ref.h"

using namespace tsr;

namespace {
Array first(const Array& b) { return reshape(slice(b, {0}, {1}), {}); }
}  // namespace

// ---- item 6 ----------------------------------------------------------------------

REF_CASE(bodies_while_const_carry) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        Array c = ref::note_type(while_loop([](const Array& c) { return c < 3; },
                                            [](const Array& c) { return c + 1; }, scalar(0)));
        return b + c;
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  Array x = device_put(ones({4}), P("x"));
  return {f(x), jit(f)(x)};
}

REF_CASE(bodies_scan_const_carry) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        auto [c, ys] =
            scan([](const Array& c, const std::tuple<>&) { return std::make_pair(c + 1.0, c); },
                 zeros({}), std::tuple<>{}, {.length = 3});
        ref::note_type(c);
        ref::note_type(ys);
        return b + c + sum(ys);
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  Array x = device_put(ones({4}), P("x"));
  return {f(x), jit(f)(x)};
}

REF_CASE(bodies_const_carries_every_creator) {
  // Each creation path as a fori_loop carry (a scan) and a while_loop carry.
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        std::vector<Array> made{zeros({2}),
                                ones({2}),
                                full({2}, 3.0),
                                astype(arange(2), float32),
                                iota({2}),
                                array<float>({1.f, 2.f}),
                                scalar(1.f) + b * 0.0};
        Array acc = b;
        for (const Array& v : made) {
          Array c = fori_loop(
              0, 2, [](const Array&, const Array& c) { return c + 1.0; }, v);
          Array d = while_loop([](const Array& c) { return sum(c) < 20.0; },
                               [](const Array& c) { return c + 1.0; }, v);
          ref::note_type(c);
          acc = acc + c + d;
        }
        return acc;
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  Array x = device_put(arange(4.f), P("x"));
  return {f(x)};
}

REF_CASE(bodies_cond_const_operand) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        Array w = array<float>({2.f, 3.f});
        Array k = scalar(1.f);
        Array c = ref::note_type(cond(
            sum(b) > 2.0, [&](const Array& v) { return v * k; },
            [&](const Array& v) { return v + k; }, w));
        return b + c;
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  Array x = device_put(arange(4.f), P("x"));
  return {f(x), jit(f)(x)};
}

// ---- item 7 ----------------------------------------------------------------------

REF_CASE(bodies_cond_varying_pred_pvary) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b, const Array& w) {
        Array pred = ref::note_type(first(b) > 0.0);
        return ref::note_type(cond(
            pred, [&](const Array& v) { return v * w; }, [](const Array& v) { return v + 1.0; },
            b));
      },
      {.in_specs = {P("x"), P()}, .out_specs = P("x")});
  Array x = device_put(arange(4.f), P("x"));
  Array w = device_put(scalar(3.f), P());
  return {f(x, w), jit(f)(x, w)};
}

REF_CASE(bodies_cond_varying_pred_invariant_out) {
  // A varying predicate does not add its axes to the output (manual-spmd §3.4).
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b, const Array& w) {
        return ref::note_type(cond(
            first(b) > 0.0, [&] { return w * 2.0; }, [&] { return w + 1.0; }));
      },
      {.in_specs = {P("x"), P()}, .out_specs = P()});
  Array x = device_put(arange(4.f), P("x"));
  Array w = device_put(scalar(3.f), P());
  return {f(x, w)};
}

REF_CASE(bodies_while_varying_pred_pvary) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b, const Array& w) {
        return ref::note_type(while_loop([](const Array& c) { return first(c) < 5.0; },
                                         [&](const Array& c) { return c * w; }, b));
      },
      {.in_specs = {P("x"), P()}, .out_specs = P("x")});
  Array x = device_put(arange(4.f) + 1.0, P("x"));
  Array w = device_put(scalar(3.f), P());
  return {f(x, w), jit(f)(x, w)};
}

REF_CASE(bodies_cond_invariant_pred_psum) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        return ref::note_type(cond(
            psum(sum(b), "x") > 0.0, [](const Array& v) { return psum(v, "x") * 2.0; },
            [](const Array& v) { return psum(v, "x"); }, b));
      },
      {.in_specs = P("x"), .out_specs = P()});
  Array x = device_put(arange(4.f), P("x"));
  return {f(x)};
}

// ---- item 8 ----------------------------------------------------------------------

REF_CASE(bodies_like_keep_vma) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        Array a = ref::note_type(full_like(b, 2.0));
        ref::note_type(zeros_like(b));
        Array o = ref::note_type(ones_like(b));
        ref::note_type(empty_like(b));
        Array i = ref::note_type(full_like(b, 2.0, int32));
        ref::note_type(zeros_like(b, int32));
        ref::note_type(ones_like(b, int32));
        Array k = ref::note_type(full_like(b, scalar(5.f)));
        return a + o + astype(i, float32) + k;
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  Array x = device_put(arange(4.f), P("x"));
  return {f(x), jit(f)(x)};
}

REF_CASE(bodies_like_partial_manual) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        ref::note_type(b);
        ref::note_type(ones_like(b, int32));
        return b + ref::note_type(zeros_like(b));
      },
      {.in_specs = P("x"), .out_specs = P("x"), .axis_names = {"x"}});
  return {f(device_put(reshape(arange(8.f), {4, 2}), P("x", "y")))};
}

// ---- item 9 ----------------------------------------------------------------------

namespace {
auto psum_vjp() {
  return custom_vjp(
      [](const Array& v) { return psum(v, "i"); },
      [](const Array& v) { return std::make_pair(psum(v, "i"), std::tuple<>()); },
      [](const std::tuple<>&, const Array& g) { return std::make_tuple(pvary(g, "i")); });
}
}  // namespace

REF_CASE(bodies_custom_vjp_psum_type) {
  Mesh m = ref::mesh({2}, {"i"});
  MeshScope s(m);
  auto fv = psum_vjp();
  auto f = shard_map([&](const Array& b) { return ref::note_type(fv(b)); },
                     {.in_specs = P("i"), .out_specs = P()});
  Array x = device_put(arange(2.f), P("i"));
  return {f(x), jit(f)(x)};
}

REF_CASE(bodies_custom_vjp_psum_grad) {
  Mesh m = ref::mesh({2}, {"i"});
  MeshScope s(m);
  auto fv = psum_vjp();
  auto f = shard_map(
      [&](const Array& b) {
        return ref::note_type(grad([&](const Array& v) { return sum(fv(v) * 2.0); })(b));
      },
      {.in_specs = P("i"), .out_specs = P("i")});
  Array x = device_put(arange(2.f), P("i"));
  return {f(x), jit(f)(x)};
}

REF_CASE(bodies_custom_vjp_bwd_wrong_vma) {
  // manual-spmd §5.6: bwd returns an invariant cotangent for a varying input.
  Mesh m = ref::mesh({2}, {"i"});
  MeshScope s(m);
  auto k = custom_vjp([](const Array& v) { return psum(v, "i"); },
                      [](const Array& v) { return std::make_pair(psum(v, "i"), std::tuple<>()); },
                      [](const std::tuple<>&, const Array& g) { return std::make_tuple(g); });
  auto f =
      shard_map([&](const Array& b) { return grad([&](const Array& v) { return sum(k(v)); })(b); },
                {.in_specs = P("i"), .out_specs = P("i")});
  return {f(device_put(arange(2.f), P("i")))};
}

REF_CASE(bodies_custom_jvp_jit_checkpoint_psum) {
  Mesh m = ref::mesh({2}, {"i"});
  MeshScope s(m);
  auto h = custom_jvp([](const Array& v) { return psum(v, "i"); },
                      [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                        return std::make_pair(psum(std::get<0>(p), "i"), psum(std::get<0>(t), "i"));
                      });
  auto jp = jit([](const Array& v) { return psum(v, "i"); });
  auto cp = checkpoint([](const Array& v) { return psum(v, "i"); });
  auto f = shard_map(
      [&](const Array& b) {
        Array y1 = ref::note_type(h(b));
        Array y2 = ref::note_type(jp(b));
        Array y3 = ref::note_type(cp(b));
        return y1 + y2 + y3;
      },
      {.in_specs = P("i"), .out_specs = P()});
  auto g = shard_map(
      [&](const Array& b) {
        Array g1 = grad([&](const Array& v) { return sum(h(v) * 2.0); })(b);
        Array g2 = grad([&](const Array& v) { return sum(jp(v) * 2.0); })(b);
        Array g3 = grad([&](const Array& v) { return sum(cp(v) * 2.0); })(b);
        ref::note_type(g1);
        ref::note_type(g2);
        ref::note_type(g3);
        return g1 + g2 + g3;
      },
      {.in_specs = P("i"), .out_specs = P("i")});
  Array x = device_put(arange(2.f), P("i"));
  return {f(x), g(x)};
}
