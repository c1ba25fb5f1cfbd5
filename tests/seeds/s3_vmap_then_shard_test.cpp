// Scenario S3 (examples/s3_vmap_then_shard.cpp): the vmapped per-individual fit gives
// bit-identical models on meshes (1), (2), (8) and (2,4) with the individuals
// sharded, the models differ between individuals (not one pooled answer), and the
// fit is better than the starting point for each of them.
#include <gtest/gtest.h>

#include <vector>

#include "../../examples/s3_fit.h"

using namespace tsr;

namespace {

constexpr int64_t kPeople = 64, kPoints = 16, kFeatures = 3;

struct Fitted {
  std::vector<float> w, b;
  std::string w_type;
};

Fitted fit_on(const std::vector<int>& sizes, const std::vector<std::string>& names) {
  auto [x, y] = s3::data(kPeople, kPoints, kFeatures, 5);
  Mesh mesh = make_mesh(sizes, names);
  MeshScope scope(mesh);
  Placement batch = names.size() == 1 ? P(names[0]) : P(Axes(names));
  s3::Model m = shard(s3::init(kPeople, kFeatures), batch);
  s3::Model r = s3::fit_all()(m, device_put(x, batch), device_put(y, batch));
  EXPECT_EQ(r.link, "logistic");
  return {r.w.to_vector<float>(), r.b.to_vector<float>(), typeof(r.w).str()};
}

TEST(S3VmapThenShard, SameModelsOnEveryMesh) {
  Fitted one = fit_on({1}, {"data"});
  EXPECT_EQ(one.w_type, "f32[64@data,3]");
  for (auto [sizes, names] : std::vector<std::pair<std::vector<int>, std::vector<std::string>>>{
           {{2}, {"data"}}, {{8}, {"data"}}, {{2, 4}, {"x", "y"}}}) {
    Fitted f = fit_on(sizes, names);
    EXPECT_EQ(one.w, f.w) << "mesh of " << names.size() << " axes, " << sizes[0] << " first";
    EXPECT_EQ(one.b, f.b);
  }
}

TEST(S3VmapThenShard, OneModelPerIndividualAndTheLossFalls) {
  auto [x, y] = s3::data(kPeople, kPoints, kFeatures, 5);
  s3::Model m = s3::fit_all()(s3::init(kPeople, kFeatures), x, y);
  auto w = m.w.to_vector<float>();
  // Individuals have their own true weights, so their fitted weights differ.
  EXPECT_NE(std::vector<float>(w.begin(), w.begin() + kFeatures),
            std::vector<float>(w.begin() + kFeatures, w.begin() + 2 * kFeatures));
  auto per_loss = vmap(s3::loss);
  auto before = per_loss(s3::init(kPeople, kFeatures), x, y).to_vector<float>();
  auto after = per_loss(m, x, y).to_vector<float>();
  for (int64_t p = 0; p < kPeople; ++p) EXPECT_LT(after[p], before[p]) << "individual " << p;
}

}  // namespace
