// Scenario S1 (SCENARIOS.md): column swap by sharded index arrays on a 2-device mesh,
// eagerly and under jit, and the vmap half (jit(vmap(f2)), the test JAX 0.6.0 could
// not pass), against NumPy's answers.
#include <gtest/gtest.h>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array f1(const Array& x, const Array& i, const Array& j) {
  Array x_a_j = x.at(all, j).get({.out_sharding = typeof(i).sharding});
  return x.at(all, i).set(x_a_j);
}

class S1 : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope{mesh};
  Array x = device_put(arange(12.0f).reshape({4, 3}), P("x"));
  Array i = device_put(array<int32_t>({0, 2}, {2}), P("x"));
  Array j = device_put(array<int32_t>({1, 0}, {2}), P("x"));
  // NumPy: x[:, i] = x[:, j]
  const std::vector<float> want = {1, 1, 0, 4, 4, 3, 7, 7, 6, 10, 10, 9};
};

TEST_F(S1, EagerMatchesNumPy) {
  Array g = x.at(all, j).get({.out_sharding = typeof(i).sharding});
  EXPECT_EQ(typeof(g).str(), "f32[4@x,2]");
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{1, 0, 4, 3, 7, 6, 10, 9}));
  Array y = f1(x, i, j);
  EXPECT_EQ(typeof(y).str(), "f32[4@x,3]");
  EXPECT_EQ(y.to_vector<float>(), want);
  // Each device holds its two rows.
  for (const auto& s : y.addressable_shards()) EXPECT_EQ(s.data->shape(), (Shape{2, 3}));
}

TEST_F(S1, JitMatchesEager) {
  auto f = jit(f1);
  Array y = f(x, i, j);
  EXPECT_EQ(typeof(y).str(), "f32[4@x,3]");
  EXPECT_EQ(y.to_vector<float>(), want);
  std::string text = f.lower(x, i, j).as_text();
  EXPECT_NE(text.find("gather"), std::string::npos) << text;
  EXPECT_NE(text.find("scatter"), std::string::npos) << text;
  EXPECT_EQ(f.trace_count(), 1);
}

TEST_F(S1, WithoutOutShardingTheErrorNamesTheFix) {
  const std::string e12 =
      "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather indexing "
      "as out sharding could not be resolved unambiguously (or would require collectives on "
      "inputs). Got operand=f32[4@x,3], indices=i32[2@x,1]";
  try {
    x.at(all, j).get();
    ADD_FAILURE() << "no error";
  } catch (const ShardingTypeError& e) {
    EXPECT_EQ(std::string(e.what()), e12);
  }
  auto g = jit([](const Array& x, const Array& j) { return x.at(all, j).get(); });
  try {
    g(x, j);
    ADD_FAILURE() << "no error under jit";
  } catch (const ShardingTypeError& e) {
    EXPECT_EQ(std::string(e.what()), e12);
  }
}

TEST_F(S1, ExplicitOutShardingOnTheSetAlsoWorks) {
  Array x_a_j = x.at(all, j).get({.out_sharding = typeof(i).sharding});
  Array y = x.at(all, i).set(x_a_j, {.out_sharding = typeof(x).sharding});
  EXPECT_EQ(typeof(y).str(), "f32[4@x,3]");
  EXPECT_EQ(y.to_vector<float>(), want);
  // A replicated result on request.
  Array r = x.at(all, i).set(x_a_j, {.out_sharding = P()});
  EXPECT_EQ(typeof(r).str(), "f32[4,3]");
  EXPECT_EQ(r.to_vector<float>(), want);
}

// f2 of the scenario: per row, x_j = x[j] laid out as x, then x[i] = x_j.
Array f2(const Array& x, const Array& i, const Array& j) {
  Array x_j = x.at(j).get({.out_sharding = typeof(x).sharding});
  return x.at(i).set(x_j);
}

TEST(S1Vmap, JitOfVmapMatchesNumPy) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  Array x = device_put(arange(12.0f).reshape({4, 3}), P("x"));
  Array i = device_put(array<int32_t>({0, 2, 1, 2}, {4}), P("x"));
  Array j = device_put(array<int32_t>({1, 0, 2, 2}, {4}), P("x"));
  // NumPy: for each row r, x[r, i[r]] = x[r, j[r]].
  const std::vector<float> want = {1, 1, 2, 3, 4, 3, 6, 8, 8, 9, 10, 11};
  std::string body_type;
  auto f = jit(vmap([&](const Array& xr, const Array& ir, const Array& jr) {
    body_type = typeof(xr).str() + " " + typeof(ir).str();
    return f2(xr, ir, jr);
  }));
  Array y = f(x, i, j);
  EXPECT_EQ(body_type, "f32[3] i32[]");
  EXPECT_EQ(typeof(y).str(), "f32[4@x,3]");
  EXPECT_EQ(y.to_vector<float>(), want);
  std::string text = f.lower(x, i, j).as_text();
  EXPECT_NE(text.find("operand_batching_dims=(0,)"), std::string::npos) << text;
  // Eager vmap agrees, and each device holds its two rows.
  Array e = vmap(f2)(x, i, j);
  EXPECT_EQ(e.to_vector<float>(), want);
  for (const auto& sh : e.addressable_shards()) EXPECT_EQ(sh.data->shape(), (Shape{2, 3}));
}

}  // namespace
