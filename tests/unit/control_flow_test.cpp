// Control flow (spec §12.16): every primitive eagerly and under jit, over meshes (1),
// (8) and (2,4) with sharded carries, against the same computation unrolled on one
// device (a host loop over eager ops on unsharded arrays).
#include <gtest/gtest.h>

#include "support/arrays.h"
#include "support/check_grads.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

struct MeshCase {
  std::string name;
  std::vector<int> shape;
  std::vector<std::string> axes;
  PartitionSpec carry;  // how the [8, 8] carry is sharded
  PartitionSpec xs;     // and [n, 8, 8] xs (dim 0 unsharded)
};

void PrintTo(const MeshCase& c, std::ostream* os) { *os << c.name; }

const std::vector<MeshCase>& meshes() {
  static const std::vector<MeshCase> m = {
      {"mesh1", {1}, {"x"}, P("x"), P(nullptr, "x")},
      {"mesh8", {8}, {"x"}, P(nullptr, "x"), P(nullptr, nullptr, "x")},
      {"mesh2x4", {2, 4}, {"x", "y"}, P("x", "y"), P(nullptr, "x", "y")},
  };
  return m;
}

Array put(const Array& a, const Mesh& m, const PartitionSpec& p) {
  return device_put(a, NamedSharding(m, p));
}

void expect_close(const Array& want, const Array& got, const std::string& what) {
  test::expect_close(want, got, 1e-4, what);
}

class ControlFlow : public ::testing::TestWithParam<std::tuple<MeshCase, bool>> {
 protected:
  Mesh mesh() const {
    const auto& c = std::get<0>(GetParam());
    return make_mesh(c.shape, c.axes);
  }
  const PartitionSpec& spec() const { return std::get<0>(GetParam()).carry; }
  bool use_jit() const { return std::get<1>(GetParam()); }
  // f run eagerly or under jit.
  template <class F, class... A>
  auto run(const F& f, const A&... a) const {
    if (use_jit()) return jit(f)(a...);
    return f(a...);
  }
  Array x0() const { return test::ramp({8, 8}, 0.125, -3.0); }
};

TEST_P(ControlFlow, FoRiLoopWithStaticBounds) {
  Mesh m = mesh();
  auto f = [](const Array& x) {
    return fori_loop(
        0, 50, [](const Array&, const Array& c) { return c * 0.999f + 1.0f; }, x);
  };
  Array want = x0();
  for (int i = 0; i < 50; ++i) want = want * 0.999f + 1.0f;
  Array got = run(f, put(x0(), m, spec()));
  expect_close(want, got, "fori_loop");
  EXPECT_EQ(got.sharding().spec(), spec().normalized(2)) << "the carry keeps its layout";
}

TEST_P(ControlFlow, FoRiLoopReadsTheIndex) {
  Mesh m = mesh();
  auto f = [](const Array& x) {
    return fori_loop(
        2, 7, [](const Array& i, const Array& c) { return c + i.astype(float32); }, x);
  };
  expect_close(x0() + 20.0f, run(f, put(x0(), m, spec())), "sum of 2..6");
}

TEST_P(ControlFlow, FoRiLoopWithTracedBoundsIsAWhileLoop) {
  Mesh m = mesh();
  auto f = [](const Array& x, const Array& n) {
    return fori_loop(
        full({}, 0.0, int32), n, [](const Array&, const Array& c) { return c * 2.0f; }, x);
  };
  expect_close(x0() * 8.0f, run(f, put(x0(), m, spec()), full({}, 3.0, int32)), "three doublings");
}

TEST_P(ControlFlow, WhileLoopOverATupleCarry) {
  Mesh m = mesh();
  using C = std::pair<Array, Array>;
  auto f = [](const Array& x) {
    C r = while_loop([](const C& c) { return c.first < 10; },
                     [](const C& c) { return C(c.first + 3, c.second * 0.5f + 1.0f); },
                     C(full({}, 0.0, int32), x));
    return r.second;
  };
  Array want = x0();
  for (int i = 0; i < 10; i += 3) want = want * 0.5f + 1.0f;
  expect_close(want, run(f, put(x0(), m, spec())), "while_loop");
}

TEST_P(ControlFlow, ScanCarriesAndStacks) {
  Mesh m = mesh();
  Array xs = test::ramp({5, 8, 8}, 0.01, 0.5);
  PartitionSpec xspec = std::get<0>(GetParam()).xs;
  auto f = [](const Array& c0, const Array& x) {
    return scan(
        [](const Array& c, const Array& xi) {
          Array n = c * 0.5f + xi;
          return std::pair<Array, Array>(n, sin(n));
        },
        c0, x);
  };
  Array c = x0();
  std::vector<Array> ys;
  for (int i = 0; i < 5; ++i) {
    c = c * 0.5f + xs[i];
    ys.push_back(sin(c));
  }
  auto [gc, gy] = run(f, put(x0(), m, spec()), put(xs, m, xspec));
  expect_close(c, gc, "carry");
  expect_close(stack(ys, 0), gy, "ys");
}

TEST_P(ControlFlow, ReverseScan) {
  Mesh m = mesh();
  Array xs = test::ramp({4, 8, 8}, 0.01, 0.5);
  PartitionSpec xspec = std::get<0>(GetParam()).xs;
  auto f = [](const Array& c0, const Array& x) {
    return scan([](const Array& c, const Array& xi) { return std::pair<Array, Array>(c + xi, c); },
                c0, x, {.reverse = true});
  };
  auto [gc, gy] = run(f, put(x0(), m, spec()), put(xs, m, xspec));
  Array c = x0();
  std::vector<Array> ys(4);
  for (int i = 3; i >= 0; --i) {
    ys[static_cast<size_t>(i)] = c;
    c = c + xs[i];
  }
  expect_close(c, gc, "carry");
  expect_close(stack(ys, 0), gy, "ys in place");
}

TEST_P(ControlFlow, CondAndSwitch) {
  Mesh m = mesh();
  auto f = [](const Array& x) {
    return cond(
        sum(x) > 0.0f, [](const Array& a) { return a * 2.0f; }, [](const Array& a) { return -a; },
        x);
  };
  Array x = put(x0(), m, spec());
  expect_close(-(x0() - 10.0f), run(f, put(x0() - 10.0f, m, spec())), "false branch");
  expect_close((x0() + 10.0f) * 2.0f, run(f, put(x0() + 10.0f, m, spec())), "true branch");
  auto g = [](const Array& i, const Array& a) {
    std::vector<std::function<Array(const Array&)>> br = {[](const Array& v) { return v + 1.0f; },
                                                          [](const Array& v) { return v * v; },
                                                          [](const Array& v) { return sin(v); }};
    return switch_case(i, br, a);
  };
  expect_close(x0() * x0(), run(g, full({}, 1.0, int32), x), "branch 1");
  expect_close(sin(x0()), run(g, full({}, 7.0, int32), x), "clamped to the last branch");
  expect_close(x0() + 1.0f, run(g, full({}, -2.0, int32), x), "clamped to the first branch");
}

TEST_P(ControlFlow, MapWithAndWithoutBatches) {
  Mesh m = mesh();
  Array xs = test::ramp({7, 8}, 0.1, -2.0);
  auto f = [](const Array& v) { return tsr::map([](const Array& r) { return r * sum(r); }, v); };
  auto g = [](const Array& v) {
    return tsr::map([](const Array& r) { return r * sum(r); }, v, {.batch_size = 3});
  };
  std::vector<Array> rows;
  for (int i = 0; i < 7; ++i) rows.push_back(xs[i] * sum(xs[i]));
  Array x = put(xs, m, P());
  expect_close(stack(rows, 0), run(f, x), "map");
  expect_close(stack(rows, 0), run(g, x), "map batch_size=3");
}

TEST_P(ControlFlow, GradThroughScanMatchesTheOneDeviceGrad) {
  Mesh m = mesh();
  Array xs = test::ramp({3, 8, 8}, 0.02, 0.1);
  PartitionSpec xspec = std::get<0>(GetParam()).xs;
  auto loss = [](const Array& c0, const Array& x) {
    auto [c, ys] = scan(
        [](const Array& c, const Array& xi) {
          Array n = sin(c) * xi + c;
          return std::pair<Array, Array>(n, n * n);
        },
        c0, x);
    return sum(c) + sum(ys);
  };
  auto g = grad(loss, argnums<0, 1>);
  auto [w0, w1] = g(x0(), xs);
  auto [g0, g1] = run(g, put(x0(), m, spec()), put(xs, m, xspec));
  expect_close(w0, g0, "d/dcarry");
  expect_close(w1, g1, "d/dxs");
}

INSTANTIATE_TEST_SUITE_P(Meshes, ControlFlow,
                         ::testing::Combine(::testing::ValuesIn(meshes()), ::testing::Bool()),
                         [](const auto& info) {
                           return std::get<0>(info.param).name +
                                  (std::get<1>(info.param) ? "_jit" : "_eager");
                         });

// ---- derivatives (one device, float64: check_grads) ------------------------------------

Array f64(const Shape& s, double step, double start) {
  return test::ramp(s, step, start).astype(float64);
}

TEST(ControlFlowAd, ScanPassesCheckGrads) {
  gradcheck::check_grads(
      [](const std::vector<Array>& a) {
        auto [c, ys] = scan(
            [&](const Array& c, const Array& x) {
              Array n = tanh(c * a[2] + x);
              return std::pair<Array, Array>(n, n * x);
            },
            a[0], a[1]);
        return std::vector<Array>{c, ys};
      },
      {f64({3}, 0.3, -0.2), f64({4, 3}, 0.1, -0.5), f64({3}, 0.2, 0.4)}, {}, "scan");
}

TEST(ControlFlowAd, FoRiLoopAndCondPassCheckGrads) {
  gradcheck::check_grads(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{fori_loop(
            0, 4, [&](const Array&, const Array& c) { return sin(c) * a[1] + c; }, a[0])};
      },
      {f64({3}, 0.3, -0.2), f64({3}, 0.2, 0.4)}, {}, "fori_loop");
  for (double p : {1.0, -1.0})
    gradcheck::check_grads(
        [p](const std::vector<Array>& a) {
          return std::vector<Array>{cond(
              full({}, p, float64) > 0.0, [](const Array& x, const Array& y) { return sin(x) * y; },
              [](const Array& x, const Array&) { return exp(x); }, a[0], a[1])};
        },
        {f64({3}, 0.3, -0.2), f64({3}, 0.2, 0.4)}, {}, p > 0 ? "cond true" : "cond false");
}

TEST(ControlFlowAd, WhileLoopIsForwardModeOnly) {
  auto f = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return while_loop([](const C& c) { return c.first < 3; },
                      [](const C& c) { return C(c.first + 1, sin(c.second)); },
                      C(full({}, 0.0, int32), x))
        .second;
  };
  Array x = f64({3}, 0.3, -0.2);
  auto [y, t] = jvp(f, x, ones_like(x));
  Array want_t = cos(x) * cos(sin(x)) * cos(sin(sin(x)));
  test::expect_close(want_t, t, 1e-9, "jvp through while");
  auto lin = linearize(f, x);
  test::expect_close(want_t, lin.second(ones_like(x)), 1e-9, "linearize through while");
  std::string e = error_of<ValueError>([&] { grad([&](const Array& v) { return sum(f(v)); })(x); });
  EXPECT_HAS(e, "Reverse-mode differentiation does not work for while_loop or fori_loop");
}

TEST(ControlFlowAd, LoopInvariantResidualsAreNotStacked) {
  // The tangent body reads w: saved once (a constant of the linear scan), not as
  // f64[5,7] (one copy per iteration).
  auto loss = [](const Array& c0, const Array& w) {
    return sum(fori_loop(
        0, 5, [&](const Array&, const Array& c) { return c * w; }, c0));
  };
  Array c0 = f64({7}, 0.3, -0.2), w = f64({7}, 0.1, 0.9);
  std::string text = make_jaxpr(grad(loss), c0, w);  // d/dc0 reads w only
  EXPECT_EQ(text.find("f64[5,7]"), std::string::npos) << text;
  auto [g0, g1] = grad(loss, argnums<0, 1>)(c0, w);
  test::expect_close(w * w * w * w * w, g0, 1e-12, "d/dc0");
  test::expect_close(c0 * w * w * w * w * 5.0, g1, 1e-12, "d/dw");
}

TEST(ControlFlowAd, CheckpointedScanBodyRecomputesAndGivesTheSameGrad) {
  auto body = [](const Array& c, const Array& x) {
    Array n = sin(c) * x + c;
    return std::pair<Array, Array>(n, n);
  };
  auto loss = [&](const Array& c0, const Array& xs) { return sum(scan(body, c0, xs).first); };
  auto loss_ck = [&](const Array& c0, const Array& xs) {
    return sum(scan(checkpoint(body), c0, xs).first);
  };
  Array c0 = f64({3}, 0.3, -0.2), xs = f64({5, 3}, 0.1, -0.5);
  test::expect_close(grad(loss)(c0, xs), grad(loss_ck)(c0, xs), 1e-12, "grad");
  std::string text = make_jaxpr(grad(loss_ck), c0, xs);
  EXPECT_HAS(text, "checkpoint");
}

TEST(ControlFlowAd, GradOfForiLoopEqualsGradOfTheUnrolledLoop) {
  auto looped = [](const Array& x, const Array& w) {
    return sum(fori_loop(
        0, 5, [&](const Array& i, const Array& c) { return tanh(c * w + i.astype(float64)); }, x));
  };
  auto unrolled = [](const Array& x, const Array& w) {
    Array c = x;
    for (int i = 0; i < 5; ++i) c = tanh(c * w + static_cast<double>(i));
    return sum(c);
  };
  Array x = f64({4}, 0.3, -0.2), w = f64({4}, 0.2, 0.4);
  auto [a0, a1] = grad(looped, argnums<0, 1>)(x, w);
  auto [b0, b1] = grad(unrolled, argnums<0, 1>)(x, w);
  test::expect_close(b0, a0, 1e-12, "d/dx");
  test::expect_close(b1, a1, 1e-12, "d/dw");
  auto [j0, j1] = jit(grad(looped, argnums<0, 1>))(x, w);
  test::expect_close(b1, j1, 1e-12, "jit d/dw");
}

TEST(ControlFlowShardMap, LoopsWithCollectivesRunOnEachDevice) {
  Mesh m = make_mesh({8}, {"x"});
  // Doubling until the global sum passes 1000: the predicate is a psum (invariant).
  auto body = [](const Array& b) {
    return while_loop([](const Array& c) { return psum(sum(c), "x") < 1000.0f; },
                      [](const Array& c) { return c * 2.0f; }, b);
  };
  Array x = put(full({8}, 1.0), m, P("x"));
  Array got = jit(shard_map(body, {.mesh = m, .in_specs = P("x"), .out_specs = P("x")}))(x);
  expect_close(full({8}, 128.0), got, "8 * 128 > 1000");
  // A scan whose body all-reduces, and its gradient through shard_map.
  auto f = [](const Array& b) {
    auto [c, ys] = scan(
        [](const Array& c, const Array& xi) {
          Array n = sin(c) + psum(xi, "x");
          return std::pair<Array, Array>(n, n);
        },
        pvary(zeros({}), {"x"}), b);
    return reshape(c + sum(ys), {1});
  };
  auto sm = shard_map(f, {.mesh = m, .in_specs = P(nullptr), .out_specs = P("x")});
  Array xs = put(test::ramp({3}, 0.25, 0.1), m, P());
  Array y = jit(sm)(xs);
  Array c = zeros({});
  Array acc = zeros({});
  for (int i = 0; i < 3; ++i) {
    c = sin(c) + xs[i] * 8.0f;
    acc = acc + c;
  }
  expect_close(broadcast_to(c + acc, {8}), y, "scan with psum");
  Array g = grad([&](const Array& v) { return sum(sm(v)); })(xs);
  Array g1 = grad([&](const Array& v) {
    Array c = zeros({});
    Array acc = zeros({});
    for (int i = 0; i < 3; ++i) {
      c = sin(c) + v[i] * 8.0f;
      acc = acc + c;
    }
    return (c + acc) * 8.0f;
  })(test::ramp({3}, 0.25, 0.1));
  expect_close(g1, g, "grad through shard_map(scan(psum))");
}

// ---- vmap ------------------------------------------------------------------------------

TEST(ControlFlowVmap, BatchedPredicateSelects) {
  auto f = [](const Array& x) {
    return cond(
        x[0] > 0.0f, [](const Array& a) { return a * 2.0f; },
        [](const Array& a) { return a - 100.0f; }, x);
  };
  Array xs = test::ramp({6, 3}, 0.5, -4.0);
  std::vector<Array> rows;
  for (int i = 0; i < 6; ++i) rows.push_back(f(xs[i]));
  expect_close(stack(rows, 0), vmap(f)(xs), "vmap(cond)");
  expect_close(stack(rows, 0), jit(vmap(f))(xs), "jit(vmap(cond))");
}

TEST(ControlFlowVmap, BatchedWhileRunsEachExampleItsOwnTripCount) {
  auto f = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return while_loop([](const C& c) { return c.first < c.second; },
                      [](const C& c) { return C(c.first + 1.0f, c.second); }, C(zeros({}), x))
        .first;
  };
  Array xs = array<float>({0.5f, 3.0f, 7.5f, -1.0f});
  expect_close(array<float>({1, 3, 8, 0}), vmap(f)(xs), "trip counts");
}

TEST(ControlFlowVmap, BatchedScanAndFori) {
  auto f = [](const Array& c0, const Array& xs) {
    return scan(
        [](const Array& c, const Array& x) { return std::pair<Array, Array>(c * x, c + x); }, c0,
        xs);
  };
  Array c0 = test::ramp({4, 2}, 0.5, 1.0), xs = test::ramp({4, 3, 2}, 0.1, 0.2);
  auto [bc, by] = vmap(f)(c0, xs);
  for (int64_t i = 0; i < 4; ++i) {
    auto [c, y] = f(c0[i], xs[i]);
    expect_close(c, bc[i], "carry " + std::to_string(i));
    expect_close(y, by[i], "ys " + std::to_string(i));
  }
}

// ---- errors (spec §12.16, manual-spmd §3.4) ------------------------------------------

TEST(ControlFlowErrors, CarryTypesMustMatch) {
  std::string e = error_of<TypeError>([] {
    fori_loop(
        0, 3, [](const Array&, const Array& c) { return c.astype(float64); }, zeros({3}));
  });
  EXPECT_HAS(e, "[scan] scan body function carry input and carry output must have equal types");
  EXPECT_HAS(e, "the dtypes do not match");
  Mesh m = make_mesh({8}, {"x"});
  std::string s = error_of<TypeError>([&] {
    fori_loop(
        0, 3, [&](const Array&, const Array& c) { return reshard(c, NamedSharding(m, P())); },
        put(zeros({8}), m, P("x")));
  });
  EXPECT_HAS(s, "the shardings do not match");
}

TEST(ControlFlowErrors, XsMustBeUnshardedAlongDimZero) {
  Mesh m = make_mesh({8}, {"x"});
  std::string e = error_of<ValueError>([&] {
    scan([](const Array& c, const Array& x) { return std::pair<Array, Array>(c, x); }, zeros({}),
         put(zeros({8, 2}), m, P("x")));
  });
  EXPECT_HAS(e, "0th dimension of all xs should be replicated. Got (P('x', None),)");
  std::string l = error_of<ValueError>([&] {
    scan([](const Array& c, const Array& x) { return std::pair<Array, Array>(c, x); }, zeros({}),
         zeros({4}), {.length = 3});
  });
  EXPECT_HAS(l, "scan got `length` argument of 3 which disagrees with leading axis sizes [4]");
  std::string mp = error_of<ValueError>([&] {
    tsr::map([](const Array& r) { return r; }, put(zeros({8, 2}), m, P("x")));
  });
  EXPECT_HAS(mp, "0th dimension of leaf passed to `tsr::map` should be replicated");
}

TEST(ControlFlowErrors, BranchesMustAgree) {
  std::string e = error_of<TypeError>([] {
    cond(
        full({}, 1.0, bool_), [](const Array& a) { return a; },
        [](const Array& a) { return sum(a); }, zeros({3}));
  });
  EXPECT_HAS(e, "cond branches must have equal output types but they differ");
  Mesh m = make_mesh({8}, {"x"});
  std::string s = error_of<TypeError>([&] {
    cond(
        full({}, 1.0, bool_), [](const Array& a) { return a; },
        [&](const Array& a) { return reshard(a, NamedSharding(m, P())); },
        put(zeros({8}), m, P("x")));
  });
  EXPECT_HAS(s, "the shardings do not match");
  std::string t = error_of<TypeError>([] {
    cond(
        full({}, 1.0, bool_), [](const Array& a) { return std::make_pair(a, a); },
        [](const Array& a) { return std::make_pair(a, a); }, zeros({3}));
    cond(
        zeros({2}), [](const Array& a) { return a; }, [](const Array& a) { return a; }, zeros({3}));
  });
  EXPECT_HAS(t, "Pred must be a scalar");
}

TEST(ControlFlowErrors, ShardMapCarriesKeepTheirVaryingAxes) {
  Mesh m = make_mesh({8}, {"x"});
  auto body = [](const Array& b) {
    return fori_loop(
        0, 2, [&](const Array&, const Array& c) { return c + b; }, zeros({1}));  // invariant
  };
  std::string e = error_of<TypeError>([&] {
    shard_map(body,
              {.mesh = m, .in_specs = P("x"), .out_specs = P("x")})(put(zeros({8}), m, P("x")));
  });
  EXPECT_HAS(e, "carry input and carry output must have equal types");
  EXPECT_HAS(e, "tsr::pvary(..., ('x',))");
  // With the pvary the same loop runs on each device's block.
  auto ok = [](const Array& b) {
    Array c = fori_loop(
        0, 3, [&](const Array&, const Array& c) { return c + b; }, pvary(zeros({1}), {"x"}));
    return psum(c, "x");
  };
  Array x = put(test::ramp({8}, 1.0, 0.0), m, P("x"));
  Array got = shard_map(ok, {.mesh = m, .in_specs = P("x"), .out_specs = P()})(x);
  expect_close(full({1}, 3.0 * 28.0), got, "3 * sum(0..7)");
}

TEST(ControlFlowErrors, AVaryingPredicateCannotGuardACollective) {
  Mesh m = make_mesh({8}, {"x"});
  auto body = [](const Array& b) {
    return cond(
        b[0] > 0.0f, [](const Array& a) { return psum(a, "x"); },
        [](const Array& a) { return psum(a * 2.0f, "x"); }, b);
  };
  std::string e = error_of<ValueError>([&] {
    shard_map(body, {.mesh = m, .in_specs = P("x"), .out_specs = P()})(put(zeros({8}), m, P("x")));
  });
  EXPECT_HAS(e, "varies over manual axes ('x',) but the body runs a collective");
}

TEST(ControlFlowErrors, ReadingATracedPredicateNamesCond) {
  std::string e = error_of<ConcretizationTypeError>(
      [] { jit([](const Array& x) { return x.item<bool>() ? x : -x; })(full({}, 1.0, bool_)); });
  EXPECT_HAS(e, "use cond / while_loop");
}

TEST(ControlFlowAuto, LoopsKeepThePassesLayoutOnAutoAxes) {
  // On an all-Auto mesh types say nothing: the carry stays where the input is, the
  // body runs on each device's block, and nothing moves.
  Mesh m = make_mesh({8}, {"x"}, {AxisType::Auto});
  Array x = put(test::ramp({8, 8}, 0.125, -3.0), m, P("x"));
  Array xs = put(test::ramp({3, 8, 8}, 0.01, 0.5), m, P(nullptr, "x"));
  auto f = [](const Array& c0, const Array& v) {
    auto [c, ys] = scan(
        [](const Array& c, const Array& xi) {
          Array n = tanh(c + xi);
          return std::pair<Array, Array>(n, n * 2.0f);
        },
        c0, v);
    return std::make_pair(fori_loop(
                              0, 4, [](const Array&, const Array& a) { return a * 0.5f; }, c),
                          ys);
  };
  Lowered l = jit(f).lower(x, xs);
  EXPECT_TRUE(l.comm_report().events.empty()) << l.comm_report().str() << l.local;
  auto [a, ys] = jit(f)(x, xs);
  EXPECT_EQ(a.sharding().spec(), P("x", nullptr));
  EXPECT_EQ(ys.sharding().spec(), P(nullptr, "x", nullptr));
  auto [wa, wys] = f(test::ramp({8, 8}, 0.125, -3.0), test::ramp({3, 8, 8}, 0.01, 0.5));
  expect_close(wa, a, "carry");
  expect_close(wys, ys, "ys");
}

TEST(ControlFlowPrint, ProgramsShowTheirBodies) {
  auto f = [](const Array& x) {
    return fori_loop(
        0, 4, [](const Array&, const Array& c) { return c * 2.0f; }, x);
  };
  Lowered l = jit(f).lower(zeros({4}));
  EXPECT_HAS(l.program, "scan[length=4");
  EXPECT_HAS(l.program, "body={ lambda");
  EXPECT_HAS(l.local, "on the devices");
}

}  // namespace
