// Scenario S4 (examples/s4_pmap.cpp): pmap(x * 2) over a (4, 5) array computes row k
// on device k, psum / pmean over the named axis give the column sums / means on every
// device, and the same computation as a shard_map over a (data, model) mesh, all
// against the plain one-device computation.
#include <gtest/gtest.h>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

const char* kAxis = "data_parallel_axis";

Array data() { return reshape(arange(0.0, 20.0), {4, 5}).astype(float32); }

void expect_eq(const Array& want, const Array& got, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  auto a = want.to_vector<float>(), b = got.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << what << " at " << i;
}

TEST(S4Pmap, RowKComputedOnDeviceK) {
  Array x = data();
  std::vector<std::string> seen;
  auto f = pmap(
      [&](const Array& row) {
        seen.push_back(typeof(row).str());
        return row * 2.0;
      },
      {.axis_name = kAxis, .in_axes = 0});
  Array y = f(x);
  EXPECT_EQ(seen, std::vector<std::string>{"f32[5]"}) << "traced once, at one row's type";
  EXPECT_EQ(y.shape(), (Shape{4, 5}));
  EXPECT_EQ(typeof(y).str(), "f32[4,5]");  // pmap's mesh is Auto, as JAX's
  EXPECT_EQ(y.sharding().spec().normalized(2), P("data_parallel_axis", nullptr));
  expect_eq(x * 2.0, y, "pmap(x * 2)");
  std::vector<Shard> shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(shards[k].device.id, k);
    expect_eq(reshape(x[k] * 2.0, {1, 5}), *shards[k].data, "device " + std::to_string(k));
  }
}

TEST(S4Pmap, PsumAndPmeanOverTheNamedAxis) {
  Array x = data();
  auto [s, m] = pmap([](const Array& r) { return std::make_pair(psum(r, kAxis), pmean(r, kAxis)); },
                     {.axis_name = kAxis})(x);
  Array col = broadcast_to(sum(x, 0), {4, 5});
  expect_eq(col, s, "psum");
  expect_eq(col / 4.0, m, "pmean");
  // Each device holds the full column sums.
  for (const Shard& sh : s.addressable_shards())
    expect_eq(reshape(sum(x, 0), {1, 5}), *sh.data, "device " + std::to_string(sh.device.id));
  // Under jit, fed with the previous pmap's result (already on the four devices).
  expect_eq(col * 4.0,
            jit(pmap([](const Array& r) { return psum(r, kAxis); }, {.axis_name = kAxis}))(s),
            "under jit");
}

TEST(S4Pmap, SameAsShardMapOnADataModelMesh) {
  Array x = data();
  for (int model : {1, 2}) {
    Mesh mesh = make_mesh({4, model}, {"data", "model"});
    Array w = reshape(arange(0.0, 10.0 * model), {5, 2 * model}).astype(float32) * 0.1;
    auto step = shard_map(
        [](const Array& b, const Array& wb) {
          Array b2 = b * 2.0;
          return std::make_tuple(b2, psum(b, "data"), pmean(b, "data"), matmul(b2, wb));
        },
        {.mesh = mesh,
         .in_specs = {P("data"), P(nullptr, "model")},
         .out_specs = {P("data"), P(), P(), P("data", "model")}});
    auto [y, s, m, h] = step(x, w);
    std::string tag = "model " + std::to_string(model);
    expect_eq(x * 2.0, y, tag + " x * 2");
    expect_eq(sum(x, 0, {.keepdims = true}), s, tag + " psum");
    expect_eq(mean(x, 0, {.keepdims = true}), m, tag + " pmean");
    expect_eq(matmul(x * 2.0, w), h, tag + " (x * 2) @ w");
    // The pmap result and the shard_map result agree row for row.
    expect_eq(pmap([](const Array& r) { return r * 2.0; }, {.axis_name = kAxis})(x), y, tag);
  }
}

}  // namespace
