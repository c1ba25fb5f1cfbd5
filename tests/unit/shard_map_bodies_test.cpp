// Types inside shard_map bodies (issue 23, items 6-9): constants made in a body as loop
// carries, cond/while with a varying predicate around a free pvary, the *_like
// creators keeping the varying axes, and custom_vjp / custom_jvp / jit / checkpoint
// results typed by the function they call. The JAX values quoted come from jax 0.10.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/shard_map.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

std::vector<float> vec(const Array& x) { return test::values<float>(x); }

Mesh auto_mesh2() { return make_mesh({2}, {"x"}, {AxisType::Auto}); }

// Every way a user makes a constant inside a body, as a scalar f32 zero.
std::vector<std::pair<std::string, std::function<Array()>>> body_constants() {
  return {
      {"scalar", [] { return scalar(0.f); }},
      {"array", [] { return array<float>({0.f}, {}); }},
      {"zeros", [] { return zeros({}); }},
      {"full", [] { return full({}, 0.0); }},
      {"arange", [] { return reshape(arange(1.f), {}); }},
      {"iota", [] { return reshape(iota({1}), {}); }},
      {"literal", [] { return astype(scalar(0) * 0, float32); }},
      {"int scalar", [] { return astype(scalar(0), float32); }},
  };
}

}  // namespace

// ---- item 6: constants made inside a body are loop carries -----------------------

TEST(ShardMapBodies, ConstantMadeInABodyIsAWhileCarry) {
  // JAX: shard_map(lambda b: b + while_loop(c < 3, c + 1, 0), P('x'), P('x'))(ones(4))
  // on a 2-device Auto mesh is [4, 4, 4, 4]. (Eager on the Auto mesh; jit on an
  // Explicit one, as a host argument under jit on Auto axes is item 2's.)
  Mesh em = make_mesh({2}, {"x"});
  for (const auto& [name, make] : body_constants()) {
    std::string seen;
    auto body = [&, make = make](const Array& b) {
      Array c = while_loop([](const Array& c) { return c < 3.0; },
                           [](const Array& c) { return c + 1.0; }, make());
      seen = typeof(c).str();
      return b + c;
    };
    auto f = shard_map(body, {.mesh = auto_mesh2(), .in_specs = P("x"), .out_specs = P("x")});
    EXPECT_EQ(vec(f(ones({4}))), std::vector<float>(4, 4.f)) << name;
    EXPECT_EQ(seen, "f32[]") << name;
    MeshScope scope(em);
    auto g = shard_map(body, {.in_specs = P("x"), .out_specs = P("x")});
    EXPECT_EQ(vec(jit(g)(device_put(ones({4}), P("x")))), std::vector<float>(4, 4.f))
        << name << " under jit";
  }
  // The program: an int32 carry made by scalar(0).
  auto h = shard_map(
      [](const Array& b) {
        return b + while_loop([](const Array& c) { return c < 3; },
                              [](const Array& c) { return c + 1; }, scalar(0));
      },
      {.mesh = auto_mesh2(), .in_specs = P("x"), .out_specs = P("x")});
  EXPECT_EQ(vec(h(ones({4}))), std::vector<float>(4, 4.f));
}

TEST(ShardMapBodies, ConstantMadeInABodyIsAScanAndForiCarry) {
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(ones({4}), P("x"));
  for (const auto& [name, make] : body_constants()) {
    std::string seen;
    auto f = shard_map(
        [&, make = make](const Array& b) {
          auto [c, ys] =
              scan([](const Array& c, const std::tuple<>&) { return std::make_pair(c + 1.0, c); },
                   make(), std::tuple<>{}, {.length = 3});
          seen = typeof(c).str() + " " + typeof(ys).str();
          Array d = fori_loop(
              0, 2, [](const Array&, const Array& c) { return c + 1.0; }, make());
          Array e = fori_loop(
              scalar(0), scalar(2), [](const Array&, const Array& c) { return c + 1.0; }, make());
          return b + c + d + e + sum(ys);
        },
        {.in_specs = P("x"), .out_specs = P("x")});
    EXPECT_EQ(vec(f(x)), std::vector<float>(4, 11.f)) << name;
    EXPECT_EQ(seen, "f32[] f32[3]") << name;
    EXPECT_EQ(vec(jit(f)(x)), std::vector<float>(4, 11.f)) << name << " under jit";
  }
}

TEST(ShardMapBodies, ConstantMadeInABodyInCondsAndLoopBodies) {
  // A cond operand, and a loop body closing over a constant the shard_map body made.
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(arange(4.f), P("x"));
  auto f = shard_map(
      [](const Array& b) {
        Array w = array<float>({2.f, 3.f});
        Array k = scalar(1.f);
        Array c = cond(
            sum(b) > 2.0, [&](const Array& v) { return v * k; },
            [&](const Array& v) { return v + k; }, w);
        Array d = while_loop([&](const Array& c) { return c < 5.f * k; },
                             [&](const Array& c) { return c + k; }, zeros({}));
        return b + c + d;
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  // Block 0 is [0, 1] (sum 1: false branch, w + 1), block 1 [2, 3] (true: w).
  std::vector<float> want{8.f, 10.f, 9.f, 11.f};
  EXPECT_EQ(vec(f(x)), want);
  EXPECT_EQ(vec(jit(f)(x)), want);
}

TEST(ShardMapBodies, JitAndVmapOfAConstantMadeInABody) {
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(ones({4}), P("x"));
  auto f = shard_map(
      [](const Array& b) {
        Array c = jit([](const Array& v) { return v * 2.0; })(scalar(3.f));
        Array d = vmap([](const Array& v) { return v + 1.0; })(array<float>({1.f, 2.f}));
        EXPECT_EQ(typeof(c).str(), "f32[]");
        EXPECT_EQ(typeof(d).str(), "f32[2]");
        return b + c + d;
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  std::vector<float> want{9.f, 10.f, 9.f, 10.f};
  EXPECT_EQ(vec(f(x)), want);
  EXPECT_EQ(vec(jit(f)(x)), want);
}

// ---- item 7: a varying predicate around a pvary (no communication) ---------------

TEST(ShardMapBodies, CondWithAVaryingPredicateAndAnImplicitPvary) {
  // JAX: cond(b[0] > 0, lambda b: b * w, lambda b: b + 1., b) with w invariant: the
  // true branch pvary's w, which moves no data. [1, 2, 6, 9].
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(arange(4.f), P("x"));
  Array w = device_put(scalar(3.f), P());
  std::string seen;
  auto f = shard_map(
      [&](const Array& b, const Array& w) {
        Array pred = reshape(slice(b, {0}, {1}), {}) > 0.0;
        Array out = cond(
            pred, [&](const Array& v) { return v * w; }, [](const Array& v) { return v + 1.0; }, b);
        seen = typeof(pred).str() + " " + typeof(out).str();
        return out;
      },
      {.in_specs = {P("x"), P()}, .out_specs = P("x")});
  std::vector<float> want{1.f, 2.f, 6.f, 9.f};
  EXPECT_EQ(vec(f(x, w)), want);
  EXPECT_EQ(seen, "bool[]{V:x} f32[2]{V:x}");
  EXPECT_EQ(vec(jit(f)(x, w)), want);
  // axis_index is no communication either.
  auto g = shard_map(
      [](const Array& b) {
        Array pred = reshape(slice(b, {0}, {1}), {}) > 0.0;
        return cond(
            pred, [](const Array& v) { return v + astype(axis_index("x"), float32); },
            [](const Array& v) { return v; }, b);
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  EXPECT_EQ(vec(g(x)), (std::vector<float>{0.f, 1.f, 3.f, 4.f}));
}

TEST(ShardMapBodies, WhileWithAVaryingPredicateAndAnImplicitPvary) {
  // JAX: while_loop(c[0] < 5, c * w, b) over blocks [1, 2], [3, 4] with w = 3.
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(arange(4.f) + 1.0, P("x"));
  Array w = device_put(scalar(3.f), P());
  auto f = shard_map(
      [](const Array& b, const Array& w) {
        return while_loop([](const Array& c) { return reshape(slice(c, {0}, {1}), {}) < 5.0; },
                          [&](const Array& c) { return c * w; }, b);
      },
      {.in_specs = {P("x"), P()}, .out_specs = P("x")});
  std::vector<float> want{9.f, 18.f, 9.f, 12.f};
  EXPECT_EQ(vec(f(x, w)), want);
  EXPECT_EQ(vec(jit(f)(x, w)), want);
}

TEST(ShardMapBodies, AVaryingPredicateStillRefusesRealCollectives) {
  // JAX hangs here (devices call different all-reduces); we refuse while tracing.
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(arange(4.f), P("x"));
  auto f = shard_map(
      [](const Array& b) {
        Array pred = reshape(slice(b, {0}, {1}), {}) > 0.0;
        return cond(
            pred, [](const Array& v) { return pvary(psum(v, "x"), "x"); },
            [](const Array& v) { return v; }, b);
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  std::string e = error_of<ValueError>([&] { (void)f(x); });
  EXPECT_HAS(e, "but the body runs a collective");
  // An invariant predicate may guard one.
  auto g = shard_map(
      [](const Array& b) {
        Array pred = psum(sum(b), "x") > 0.0;
        return cond(
            pred, [](const Array& v) { return psum(v, "x") * 2.0; },
            [](const Array& v) { return psum(v, "x"); }, b);
      },
      {.in_specs = P("x"), .out_specs = P()});
  EXPECT_EQ(vec(g(x)), (std::vector<float>{4.f, 8.f}));
}

// ---- item 8: the *_like creators keep the varying axes ---------------------------

TEST(ShardMapBodies, LikeCreatorsKeepTheVaryingAxes) {
  // JAX: float32[2]{V:x} for full_like, zeros_like, ones_like and empty_like; the dtype
  // override keeps them too (int32[2]{V:x}).
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(arange(4.f), P("x"));
  std::vector<std::string> seen;
  auto f = shard_map(
      [&](const Array& b) {
        std::vector<Array> made{full_like(b, 2.0),
                                zeros_like(b),
                                ones_like(b),
                                empty_like(b),
                                full_like(b, 2.0, int32),
                                zeros_like(b, int32),
                                full_like(b, scalar(5.f)),
                                full_like(b, scalar(5.f), int32)};
        seen.clear();
        for (const auto& a : made) seen.push_back(typeof(a).str());
        return made[0] + made[2] + astype(made[4], float32) + made[6];
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  EXPECT_EQ(vec(f(x)), std::vector<float>(4, 10.f));
  EXPECT_EQ(seen,
            (std::vector<std::string>{"f32[2]{V:x}", "f32[2]{V:x}", "f32[2]{V:x}", "f32[2]{V:x}",
                                      "i32[2]{V:x}", "i32[2]{V:x}", "f32[2]{V:x}", "i32[2]{V:x}"}));
  EXPECT_EQ(vec(jit(f)(x)), std::vector<float>(4, 10.f));
}

TEST(ShardMapBodies, LikeCreatorsInAPartialManualBody) {
  // JAX: b: float32[2,2@y]{V:x} gives zeros_like float32[2,2@y]{V:x}.
  Mesh m = make_mesh({2, 2}, {"x", "y"});
  MeshScope scope(m);
  Array x = device_put(reshape(arange(8.f), {4, 2}), P("x", "y"));
  std::string seen;
  auto f = shard_map(
      [&](const Array& b) {
        Array z = zeros_like(b);
        seen = typeof(b).str() + " " + typeof(z).str() + " " + typeof(ones_like(b, int32)).str();
        return b + z;
      },
      {.in_specs = P("x"), .out_specs = P("x"), .axis_names = {"x"}});
  EXPECT_EQ(vec(f(x)), vec(reshape(arange(8.f), {4, 2})));
  EXPECT_EQ(seen, "f32[2,2@y]{V:x} f32[2,2@y]{V:x} i32[2,2@y]{V:x}");
}

// ---- item 9: a call's result is typed by the function it calls -------------------

TEST(ShardMapBodies, CustomVjpResultTakesTheForwardsType) {
  // JAX: a custom_vjp whose function is psum(x, 'i') types its result float32[1] in
  // the body, so out_specs P() holds; grad through it is float32[1]{V:i}.
  Mesh m = make_mesh({2}, {"i"});
  MeshScope scope(m);
  Array x = device_put(arange(2.f), P("i"));
  auto f = custom_vjp(
      [](const Array& v) { return psum(v, "i"); },
      [](const Array& v) { return std::make_pair(psum(v, "i"), std::tuple<>()); },
      [](const std::tuple<>&, const Array& g) { return std::make_tuple(pvary(g, "i")); });
  std::string seen;
  auto body = shard_map(
      [&](const Array& b) {
        Array y = f(b);
        seen = typeof(y).str();
        return y;
      },
      {.in_specs = P("i"), .out_specs = P()});
  EXPECT_EQ(vec(body(x)), (std::vector<float>{1.f}));
  EXPECT_EQ(seen, "f32[1]");
  EXPECT_EQ(vec(jit(body)(x)), (std::vector<float>{1.f}));
  auto gbody = shard_map(
      [&](const Array& b) {
        Array g = grad([&](const Array& v) { return sum(f(v) * 2.0); })(b);
        seen = typeof(g).str();
        return g;
      },
      {.in_specs = P("i"), .out_specs = P("i")});
  EXPECT_EQ(vec(gbody(x)), (std::vector<float>{2.f, 2.f}));
  EXPECT_EQ(seen, "f32[1]{V:i}");
  EXPECT_EQ(vec(jit(gbody)(x)), (std::vector<float>{2.f, 2.f}));
}

TEST(ShardMapBodies, CustomVjpBwdWithTheWrongVaryingAxes) {
  // manual-spmd §5.6: a bwd returning an invariant cotangent for a varying input.
  Mesh m = make_mesh({2}, {"i"});
  MeshScope scope(m);
  Array x = device_put(arange(2.f), P("i"));
  auto k = custom_vjp([](const Array& v) { return psum(v, "i"); },
                      [](const Array& v) { return std::make_pair(psum(v, "i"), std::tuple<>()); },
                      [](const std::tuple<>&, const Array& g) { return std::make_tuple(g); });
  auto gbody =
      shard_map([&](const Array& b) { return grad([&](const Array& v) { return sum(k(v)); })(b); },
                {.in_specs = P("i"), .out_specs = P("i")});
  std::string e = error_of<ValueError>([&] { (void)gbody(x); });
  EXPECT_HAS(e,
             "the bwd rule produced an output of type f32[1] corresponding to an input of "
             "type f32[1]{V:i}, so the manual axis types do not match");
}

TEST(ShardMapBodies, CustomJvpJitAndCheckpointResultsTakeTheFunctionsType) {
  Mesh m = make_mesh({2}, {"i"});
  MeshScope scope(m);
  Array x = device_put(arange(2.f), P("i"));
  auto h = custom_jvp([](const Array& v) { return psum(v, "i"); },
                      [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                        return std::make_pair(psum(std::get<0>(p), "i"), psum(std::get<0>(t), "i"));
                      });
  auto jp = jit([](const Array& v) { return psum(v, "i"); });
  auto cp = checkpoint([](const Array& v) { return psum(v, "i"); });
  std::vector<std::string> seen;
  auto body = shard_map(
      [&](const Array& b) {
        Array y1 = h(b), y2 = jp(b), y3 = cp(b);
        seen = {typeof(y1).str(), typeof(y2).str(), typeof(y3).str()};
        return y1 + y2 + y3;
      },
      {.in_specs = P("i"), .out_specs = P()});
  EXPECT_EQ(vec(body(x)), (std::vector<float>{3.f}));
  EXPECT_EQ(seen, (std::vector<std::string>{"f32[1]", "f32[1]", "f32[1]"}));
  EXPECT_EQ(vec(jit(body)(x)), (std::vector<float>{3.f}));
  // Their gradients: the cotangent of psum's varying operand (JAX: [2, 2]).
  auto gbody = shard_map(
      [&](const Array& b) {
        Array g1 = grad([&](const Array& v) { return sum(h(v) * 2.0); })(b);
        Array g2 = grad([&](const Array& v) { return sum(jp(v) * 2.0); })(b);
        Array g3 = grad([&](const Array& v) { return sum(cp(v) * 2.0); })(b);
        seen = {typeof(g1).str(), typeof(g2).str(), typeof(g3).str()};
        return g1 + g2 + g3;
      },
      {.in_specs = P("i"), .out_specs = P("i")});
  EXPECT_EQ(vec(gbody(x)), (std::vector<float>{6.f, 6.f}));
  EXPECT_EQ(seen, (std::vector<std::string>{"f32[1]{V:i}", "f32[1]{V:i}", "f32[1]{V:i}"}));
  EXPECT_EQ(vec(jit(gbody)(x)), (std::vector<float>{6.f, 6.f}));
}
