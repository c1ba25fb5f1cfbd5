// vmap with axis_name (manual-spmd §6.2): collectives over the vmap's axis act on the
// batch as if each example were a device, checked against loops over the examples;
// nested names; and vmap inside a shard_map body (collectives over mesh axes act per
// example).
#include <gtest/gtest.h>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array iota_f(const Shape& s) { return test::ramp(s, 0.5, -2.0); }

void expect_eq(const Array& want, const Array& got, const std::string& what) {
  test::expect_close(want, got, 1e-5, what);
}

// f applied to each of the 4 examples (rows) with axis_name "i".
template <class F>
Array vm(F f, const Array& x) {
  return vmap(f, {.axis_name = "i"})(x);
}

// The 4 rows' result stacked, each computed from every row (the loop).
template <class F>
Array loop(F per_row, const Array& x) {
  std::vector<Array> rows;
  for (int64_t k = 0; k < x.shape()[0]; ++k) rows.push_back(per_row(x, k));
  return stack(rows, 0);
}

TEST(VmapCollectives, ReductionsOverTheBatch) {
  Array x = iota_f({4, 3});
  expect_eq(loop([](const Array& a, int64_t) { return sum(a, 0); }, x),
            vm([](const Array& r) { return psum(r, "i"); }, x), "psum");
  expect_eq(loop([](const Array& a, int64_t) { return mean(a, 0); }, x),
            vm([](const Array& r) { return pmean(r, "i"); }, x), "pmean");
  expect_eq(loop([](const Array& a, int64_t) { return max(a, 0); }, x),
            vm([](const Array& r) { return pmax(r, "i"); }, x), "pmax");
  expect_eq(loop([](const Array& a, int64_t) { return min(a, 0); }, x),
            vm([](const Array& r) { return pmin(r, "i"); }, x), "pmin");
  // Normalising by the psum: each row divided by the column sums.
  expect_eq(x / sum(x, 0), vm([](const Array& r) { return r / psum(r, "i"); }, x), "r/psum");
  EXPECT_EQ(
      test::values<double>(
          vm([](const Array& r) { return r * 0.0 + static_cast<double>(axis_size("i")); }, x))[0],
      4.0);
}

TEST(VmapCollectives, UnbatchedOperandIsTheSameOnEveryExample) {
  Array x = iota_f({4, 3});
  Array c = iota_f({3});
  // psum of a value every example shares is size * value (§4.1).
  expect_eq(loop([&](const Array&, int64_t) { return c * 4.0; }, x),
            vm([&](const Array& r) { return r * 0.0 + psum(c, "i"); }, x), "psum(c)");
}

TEST(VmapCollectives, AxisIndexIsTheExampleIndex) {
  Array x = iota_f({4, 3});
  Array got = vm([](const Array& r) { return r + axis_index("i").astype(float32); }, x);
  expect_eq(loop([](const Array& a, int64_t k) { return a[k] + static_cast<double>(k); }, x), got,
            "axis_index");
}

TEST(VmapCollectives, DataMovementOverTheBatch) {
  Array x = iota_f({4, 3});
  expect_eq(loop([](const Array& a, int64_t) { return a; }, x),
            vm([](const Array& r) { return all_gather(r, "i"); }, x), "all_gather");
  expect_eq(loop([](const Array& a, int64_t) { return transpose(a); }, x),
            vm([](const Array& r) { return all_gather(r, "i", {.axis = 1}); }, x),
            "all_gather axis 1");
  expect_eq(loop([](const Array& a, int64_t) { return reshape(a, {12}); }, x),
            vm([](const Array& r) { return all_gather(r, "i", {.tiled = true}); }, x),
            "all_gather tiled");
  expect_eq(loop([](const Array& a, int64_t k) { return a[(k + 3) % 4]; }, x),
            vm(
                [](const Array& r) {
                  return ppermute(r, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
                },
                x),
            "ppermute");
  expect_eq(loop([](const Array& a, int64_t) { return a[2]; }, x),
            vm([](const Array& r) { return pbroadcast(r, "i", 2); }, x), "pbroadcast");
  Array y = iota_f({4, 4, 3});  // example j: (4, 3); instance k gets sum_j y[j][k]
  expect_eq(loop([](const Array& a, int64_t k) { return sum(a, 0)[k]; }, y),
            vm([](const Array& r) { return psum_scatter(r, "i"); }, y), "psum_scatter");
  Array z = iota_f({4, 8, 3});
  expect_eq(loop(
                [](const Array& a, int64_t k) {
                  return slice(sum(a, 0), {2 * k, 0}, {2 * k + 2, 3});
                },
                z),
            vm([](const Array& r) { return psum_scatter(r, "i", {.tiled = true}); }, z),
            "psum_scatter tiled");
  // all_to_all untiled with split = concat = 0 swaps the example axis with axis 0.
  expect_eq(swapaxes(y, 0, 1), vm([](const Array& r) { return all_to_all(r, "i", 0, 0); }, y),
            "all_to_all");
  expect_eq(loop(
                [](const Array& a, int64_t k) {
                  Array col = squeeze(slice(a, {0, k, 0}, {4, k + 1, 3}), 1);  // (j, 3)
                  return moveaxis(col, 0, 1);
                },
                y),
            vm([](const Array& r) { return all_to_all(r, "i", 0, 1); }, y), "all_to_all concat 1");
  // Tiled: instance k concatenates, along concat, part k (along split) of every example.
  Array w = iota_f({4, 8, 12});
  for (auto [split, concat] :
       {std::pair{0, 1}, std::pair{1, 0}, std::pair{0, 0}, std::pair{1, 1}}) {
    auto part = [split = split](const Array& e, int64_t k) {
      Shape lo(2, 0), hi = e.shape();
      int64_t p = e.shape()[static_cast<size_t>(split)] / 4;
      lo[static_cast<size_t>(split)] = k * p;
      hi[static_cast<size_t>(split)] = (k + 1) * p;
      return slice(e, lo, hi);
    };
    Array want = loop(
        [&](const Array& a, int64_t k) {
          std::vector<Array> parts;
          for (int64_t j = 0; j < 4; ++j) parts.push_back(part(a[j], k));
          return concatenate(parts, concat);
        },
        w);
    expect_eq(
        want,
        vm([split = split,
            concat = concat](const Array& r) { return all_to_all(r, "i", split, concat, true); },
           w),
        "tiled all_to_all split " + std::to_string(split) + " concat " + std::to_string(concat));
  }
}

TEST(VmapCollectives, NestedNamesReduceTogether) {
  Array x = iota_f({2, 4, 3});
  auto inner = vmap(
      [](const Array& r) {
        return psum(r, AxisNames{"i", "j"});
      },
      {.axis_name = "j"});
  Array got = vmap(inner, {.axis_name = "i"})(x);
  Array total = sum(sum(x, 0), 0);
  expect_eq(broadcast_to(total, {2, 4, 3}), got, "psum over (i, j)");
}

TEST(VmapCollectives, UnboundNameAndPartialPermutation) {
  Array x = iota_f({4, 3});
  std::string e = error_of<NameError>([&] { vm([](const Array& r) { return psum(r, "j"); }, x); });
  EXPECT_NE(e.find("Found an unbound axis name: j"), std::string::npos) << e;
  std::string p = error_of<NotImplementedError>([&] {
    vm([](const Array& r) { return ppermute(r, "i", {{0, 1}}); }, x);
  });
  EXPECT_NE(p.find("full permutation"), std::string::npos) << p;
}

TEST(VmapCollectives, VmapInsideAShardMapBody) {
  // The body vmaps over its block's rows: psum over the mesh axis acts per row, psum
  // over the vmap's name over the block's rows.
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  Array host = iota_f({8, 3});
  Array got = shard_map(
      [](const Array& b) {
        return vmap([](const Array& r) { return psum(r, "x") + psum(r, "i"); },
                    {.axis_name = "i"})(b);
      },
      {.in_specs = P("x"), .out_specs = P("x")})(device_put(host, P("x")));
  Array blocks = reshape(host, {4, 2, 3});
  std::vector<Array> want;
  for (int64_t k = 0; k < 4; ++k) want.push_back(sum(blocks, 0) + sum(blocks[k], 0));
  expect_eq(concatenate(want, 0), got, "vmap in shard_map");
}

}  // namespace
