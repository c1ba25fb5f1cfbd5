// jit and mesh edge cases: visualize while tracing, in/out_shardings counts, recursion
// through jit, reshard onto a renamed mesh, Auto axes in out_shardings, mesh updates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tsr/tsr.h>

#include "support/error_of.h"

using namespace tsr;

TEST(JitMesh, VisualizeTracedArray) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  Array a = device_put(iota({8, 4}), NamedSharding(m, P("X", "Y")));
  std::string inside, inside_ctx, plain;
  auto f = jit([&](const Array& x) {
    inside = visualize(x);
    return x * 2.0;
  });
  Array r = f(a);
  EXPECT_EQ(r.to_vector<float>()[31], 62.f);
  EXPECT_HAS(inside, "f32[8@X,4@Y] on AbstractMesh('X': 4, 'Y': 2");
  EXPECT_HAS(inside, "│  #0  │  #1  │");
  EXPECT_HAS(inside, "│  #6  │  #7  │");
  EXPECT_HAS(inside, "shard shape (2, 2), 16 B per device, 8 devices");
  {
    // Under the array's mesh the devices are known.
    MeshScope scope(m);
    auto g = jit([&](const Array& x) {
      inside_ctx = visualize(x);
      return x;
    });
    g(a);
  }
  EXPECT_HAS(inside_ctx, "│  CPU 6  │  CPU 7  │");
  // Unsharded values with no mesh in the type print just the type.
  auto h = jit([&](const Array& x) {
    plain = visualize(x);
    return x;
  });
  h(array({1.f, 2.f}));
  EXPECT_HAS(plain, "f32[2]");
  EXPECT_HAS(plain, "holds the whole value");
}
