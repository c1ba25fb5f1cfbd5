// Autodiff of collectives over a vmap's axis_name (manual-spmd §6.2, issue 23 items 1,
// 10, 11): outside check_vma regions a vmap's axis is untyped, so psum transposes to
// psum (JAX's psum_p) and every collective's gradient is the gradient of the sum of
// the per-example losses, checked against a loop over the examples; the same with the
// vmap inside a shard_map or pmap, under jit and its cache; spmd_axis_name resolved on
// the shard_map's mesh; vmap of pmap with a collective over the vmap's name.
#include <gtest/gtest.h>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array iota_f(const Shape& s) { return test::ramp(s, 0.25, -1.5); }

void expect_eq(const Array& want, const Array& got, const std::string& what) {
  test::expect_close(want, got, 1e-5, what);
}

TEST(VmapCollectiveGrads, PsumTransposesToPsumOutsideShardMap) {
  // The program; JAX 0.10.2 gives -5 (psum_p transposes to psum).
  auto g = vmap(grad([](const Array& x) { return -psum(x, "i"); }),
                {.out_axes = none, .axis_name = "i"});
  expect_eq(full({}, -5.0), g(ones({5})), "grad of -psum");
  expect_eq(full({}, -5.0), jit(g)(ones({5})), "jit(vmap(grad))");
  auto gj = vmap(jit(grad([](const Array& x) { return -psum(x, "i"); })),
                 {.out_axes = none, .axis_name = "i"});
  expect_eq(full({}, -5.0), gj(ones({5})), "vmap(jit(grad))");
  // pmean: 1 per example (each of the 5 losses takes 1/5 of x).
  auto m = vmap(grad([](const Array& x) { return pmean(x, "i"); }), {.axis_name = "i"});
  expect_eq(ones({5}), m(ones({5})), "grad of pmean");
  // all_gather: every example's loss reads x, so 5.
  auto a = vmap(grad([](const Array& x) { return sum(all_gather(x, "i")); }), {.axis_name = "i"});
  expect_eq(full({5}, 5.0), a(ones({5})), "grad of sum(all_gather)");
}

// The per-example losses sum(w_k * sin(c_k)) of a collective c over the vmap's axis,
// differentiated per example under vmap, against the gradient of their sum where the
// collective is written out over the stacked examples (`all`); and vjp alike.
template <class C, class All>
void check_collective(const std::string& what, C coll, All all, const Array& x) {
  Array w = cos(iota_f(all(x).shape()));  // per-example weights of the losses
  auto per = [&](const Array& xk, const Array& wk) {
    return grad([&](const Array& v) { return sum(wk * sin(coll(v))); })(xk);
  };
  Array want = grad([&](const Array& xs) { return sum(w * sin(all(xs))); })(x);
  expect_eq(want, vmap(per, {.axis_name = "i"})(x, w), what + ": vmap(grad)");
  expect_eq(want, jit(vmap(per, {.axis_name = "i"}))(x, w), what + ": jit(vmap(grad))");
  auto per_vjp = [&](const Array& xk, const Array& ck) {
    auto [y, f_vjp] = vjp(coll, xk);
    return std::get<0>(f_vjp(ck));
  };
  auto [ya, all_vjp] = vjp(all, x);
  expect_eq(std::get<0>(all_vjp(w)), vmap(per_vjp, {.axis_name = "i"})(x, w), what + ": vjp");
}

TEST(VmapCollectiveGrads, EveryCollectiveAgainstALoopOverTheExamples) {
  Array x = iota_f({4, 4, 3});  // 4 examples of (4, 3)
  auto stacked = [](const Array& xs, auto per) {
    std::vector<Array> r;
    for (int64_t k = 0; k < xs.shape()[0]; ++k) r.push_back(per(k));
    return stack(r, 0);
  };
  check_collective(
      "psum", [](const Array& v) { return psum(v, "i"); },
      [&](const Array& xs) { return stacked(xs, [&](int64_t) { return sum(xs, 0); }); }, x);
  check_collective(
      "pmean", [](const Array& v) { return pmean(v, "i"); },
      [&](const Array& xs) { return stacked(xs, [&](int64_t) { return mean(xs, 0); }); }, x);
  check_collective(
      "psum of a function of v", [](const Array& v) { return v * psum(v * v, "i"); },
      [&](const Array& xs) { return xs * sum(xs * xs, 0); }, x);
  check_collective(
      "all_gather", [](const Array& v) { return all_gather(v, "i", {.axis = 1}); },
      [&](const Array& xs) { return stacked(xs, [&](int64_t) { return moveaxis(xs, 0, 1); }); }, x);
  check_collective(
      "all_gather invariant",
      [](const Array& v) { return all_gather(v, "i", {.invariant = true}); },
      [&](const Array& xs) { return stacked(xs, [&](int64_t) { return xs; }); }, x);
  check_collective(
      "psum_scatter", [](const Array& v) { return psum_scatter(v, "i"); },
      [&](const Array& xs) { return sum(xs, 0); }, x);
  check_collective(
      "psum_scatter tiled",
      [](const Array& v) { return psum_scatter(v, "i", {.scatter_dimension = 0, .tiled = true}); },
      [&](const Array& xs) {
        return reshape(sum(xs, 0), {4, 1, 3});
      },
      x);
  check_collective(
      "ppermute",
      [](const Array& v) {
        return ppermute(v, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
      },
      [&](const Array& xs) { return stacked(xs, [&](int64_t k) { return xs[(k + 3) % 4]; }); }, x);
  check_collective(
      "all_to_all", [](const Array& v) { return all_to_all(v, "i", 0, 1); },
      [&](const Array& xs) {  // example k gets row k of every example, stacked at 1
        return stacked(xs, [&](int64_t k) {
          return moveaxis(squeeze(slice(xs, {0, k, 0}, {4, k + 1, 3}), 1), 0, 1);
        });
      },
      x);
  check_collective(
      "pbroadcast", [](const Array& v) { return pbroadcast(v, "i", 2); },
      [&](const Array& xs) { return stacked(xs, [&](int64_t) { return xs[2]; }); }, x);
}

TEST(VmapCollectiveGrads, NestedNamesAndJitCache) {
  // Two vmap names reduced together: the 2 * 3 losses each read every x.
  auto inner = vmap(grad([](const Array& v) {
                      return -psum(v, AxisNames{"i", "j"});
                    }),
                    {.axis_name = "j"});
  expect_eq(full({2, 3}, -6.0), vmap(inner, {.axis_name = "i"})(ones({2, 3})), "psum (i, j)");
  // One jit object under vmaps of different sizes: pmean's 1/size and the transposes
  // depend on the bound axis, so the cache may not share the trace.
  auto jm = jit([](const Array& v) { return pmean(v, "i"); });
  expect_eq(full({5}, 1.0), vmap(jm, {.axis_name = "i"})(iota_f({5}) * 0.0 + 1.0), "size 5");
  Array three = array({1.f, 2.f, 6.f});
  expect_eq(full({3}, 3.0), vmap(jm, {.axis_name = "i"})(three), "size 3");
  auto jg = jit(grad([](const Array& v) { return -psum(v, "i"); }));
  expect_eq(full({5}, -5.0), vmap(jg, {.axis_name = "i"})(ones({5})), "grad size 5");
  expect_eq(full({3}, -3.0), vmap(jg, {.axis_name = "i"})(ones({3})), "grad size 3");
}

TEST(VmapCollectiveGrads, JitWhoseBatchingMakesConstants) {
  // ppermute's and pbroadcast's batching rules take rows by constant indices: the
  // batched nested jit passes them in (the fuzzer found "the nested call has 2 inputs").
  Array x = iota_f({4, 3});
  auto pp = [](const Array& v) { return ppermute(v, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}); };
  Array want = stack({x[3], x[0], x[1], x[2]}, 0);
  expect_eq(want, vmap(jit(pp), {.axis_name = "i"})(x), "vmap(jit(ppermute))");
  auto g = jit([](const Array& v, const Array& w) {
    auto [y, f] = vjp([](const Array& u) { return pbroadcast(u, "i", 0); }, v);
    return std::get<0>(f(w));
  });
  // Every example's result is example 0's: its cotangent is the sum of all of them.
  Array got = vmap(g, {.axis_name = "i"})(x, x * 2.0);
  expect_eq(concatenate({sum(x * 2.0, 0, {.keepdims = true}), zeros({3, 3})}, 0), got,
            "vmap(jit(vjp(pbroadcast)))");
}

TEST(VmapCollectiveGrads, InsideShardMapAndPmap) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  Array host = ones({6});
  auto body = [](AxisNames axes) {
    return [axes](const Array& b) {
      return vmap(grad([&](const Array& v) { return -psum(v, axes); }), {.axis_name = "i"})(b);
    };
  };
  auto run = [&](AxisNames axes, bool check_vma) {
    return shard_map(body(axes), {.in_specs = P("x"), .out_specs = P("x"), .check_vma = check_vma})(
        device_put(host, P("x")));
  };
  // The vmap's axis is untyped in a check_vma body too: the 3 losses of a device.
  expect_eq(full({6}, -3.0), run({"i"}, true), "check_vma, psum over i");
  // Mixed: pvary over the manual axis (its invariant loss counts once), psum over the
  // vmap's (JAX asserts here).
  expect_eq(full({6}, -3.0), run({"x", "i"}, true), "check_vma, psum over (x, i)");
  // Without check_vma both are the legacy psum: 2 devices * 3 examples (JAX: -6).
  expect_eq(full({6}, -6.0), run({"x", "i"}, false), "check_vma=false, psum over (x, i)");
  auto loss = [](const Array& v) { return -psum(v, AxisNames{"j", "i"}); };
  expect_eq(full({2, 3}, -6.0),
            pmap(vmap(grad(loss), {.axis_name = "i"}), {.axis_name = "j"})(ones({2, 3})),
            "pmap of vmap");
  expect_eq(full({3, 2}, -6.0),
            vmap(pmap(grad(loss), {.axis_name = "j"}), {.axis_name = "i"})(ones({3, 2})),
            "vmap of pmap");
}

TEST(VmapCollectiveGrads, ShardMapInsideVmap) {
  // A body's psum over the enclosing vmap's name is untyped under check_vma too:
  // sum_k sum(S * v_k) with S the sum of the examples has gradient 2 S for each.
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = iota_f({3, 8});
  Array want = broadcast_to(sum(x, 0) * 2.0, {3, 8});
  for (bool check_vma : {true, false}) {
    auto f = [check_vma](const Array& v) {
      return sum(shard_map([](const Array& b) { return psum(b, "i") * b; },
                           {.in_specs = P("x"), .out_specs = P("x"), .check_vma = check_vma})(v));
    };
    auto g = vmap(grad(f), {.axis_name = "i"});
    std::string what = check_vma ? "check_vma" : "check_vma=false";
    expect_eq(want, g(device_put(x, P(nullptr, "x"))), what);
    expect_eq(want, jit(g)(device_put(x, P(nullptr, "x"))), what + ", jit");
  }
}

TEST(VmapSpmdAxisName, ResolvedOnTheShardMapsMesh) {
  // No context mesh and a host argument: the name is the shard_map's axis (JAX runs it).
  Mesh m = make_mesh({2}, {"i"}, {AxisType::Auto});
  Array x = iota_f({4, 2});
  auto f = shard_map([](const Array& b) { return b * 2.0; },
                     {.mesh = m, .in_specs = P(), .out_specs = P()});
  auto vf = vmap(f, {.spmd_axis_name = {"i"}});
  expect_eq(x * 2.0, vf(x), "spmd_axis_name without a context mesh");
  expect_eq(x * 2.0, jit(vf)(x), "the same under jit");
  // Names no shard_map uses are not checked (JAX neither).
  expect_eq(x, vmap([](const Array& v) { return v; }, {.spmd_axis_name = {"z"}})(x), "unused");
}

TEST(VmapOfPmap, PpermuteOverTheVmapsName) {
  // JAX: [[2, 3], [0, 1]]: the vmap's two examples swap.
  Array x = reshape(iota({4}).astype(float32), {2, 2});
  auto pf = pmap(
      [](const Array& z) {
        return ppermute(z, "i", {{0, 1}, {1, 0}});
      },
      {.axis_name = "j"});
  Array want = array({2.f, 3.f, 0.f, 1.f}).reshape({2, 2});
  expect_eq(want, vmap(pf, {.axis_name = "i"})(x), "vmap of pmap");
  expect_eq(want, jit(vmap(pf, {.axis_name = "i"}))(x), "jit(vmap of pmap)");
}

}  // namespace
