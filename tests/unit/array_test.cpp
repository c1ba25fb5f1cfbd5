// Arrays: creation on shardings, reading back, shards, typeof strings, errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include <tsr/tsr.h>

using namespace tsr;
using ::testing::HasSubstr;

namespace {
std::vector<float> iota_vec(int n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.f);
  return v;
}
}  // namespace

TEST(Array, TypeofStrings) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  MeshScope scope(m);
  EXPECT_EQ(typeof(zeros({8, 4}, float32, P("X", "Y"))).str(), "f32[8@X,4@Y]");
  EXPECT_EQ(typeof(zeros({8, 4}, float32, P("Y"))).str(), "f32[8@Y,4]");
  EXPECT_EQ(typeof(zeros({128, 64}, float32, P(Axes{"Y", "X"}))).str(), "f32[128@(Y,X),64]");
  EXPECT_EQ(typeof(zeros({8}, int32)).str(), "i32[8]");  // replicated on the context mesh
  EXPECT_EQ(typeof(zeros({}, bfloat16)).str(), "bf16[]");
  EXPECT_EQ(typeof(zeros({8, 2}, float32, P("X", nullptr, Unreduced{{"Y"}}))).str(),
            "f32[8@X,2]{U:Y}");
  EXPECT_EQ(typeof(zeros({8, 2}, float32, P(nullptr, nullptr, Unreduced{{"X", "Y"}}))).str(),
            "f32[8,2]{U:(X,Y)}");
  EXPECT_EQ(typeof(zeros({2}, float32, P(nullptr, Unreduced{{"X"}, UnreducedKind::Max}))).str(),
            "f32[2]{U_max:X}");
  EXPECT_EQ(typeof(zeros({2}, float32, P(nullptr, Reduced{{"X"}}))).str(), "f32[2]{R:X}");
  ArrayType t = typeof(zeros({4}));
  t.weak = true;
  t.vma = {"x"};
  EXPECT_EQ(t.str(), "~f32[4]{V:x}");
  // Types carry the abstract mesh with the spec normalized to the rank.
  auto ty = typeof(zeros({8, 4}, float32, P("X")));
  EXPECT_EQ(ty.sharding.spec(), P("X", nullptr));
  EXPECT_EQ(ty.sharding.mesh(), m.abstract_mesh());
  EXPECT_FALSE(ty.sharding.concrete_mesh().has_value());
}

TEST(Array, TypeDoesNotDependOnContext) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  Array x = device_put(zeros({8}), NamedSharding(m, P("X")));
  MeshScope other(make_mesh({8}, {"d"}));
  EXPECT_EQ(typeof(x).str(), "f32[8@X]");
}

TEST(Array, SingleDeviceHasEmptyMeshType) {
  Array x = array({1.f, 2.f, 3.f});
  EXPECT_EQ(typeof(x).str(), "f32[3]");
  EXPECT_TRUE(typeof(x).sharding.mesh().empty());
  EXPECT_EQ(x.sharding().concrete_mesh()->devices()[0].id, 0);
  Array y = device_put(x, Device{Platform::CPU, 5});
  EXPECT_EQ(y.addressable_shards()[0].device.id, 5);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(Array, HostRoundTripEveryDType) {
  Mesh m = make_mesh({2, 4}, {"a", "b"});
  for (int k = 0; k < kNumDTypes; ++k) {  // every dtype, those added later included
    DType dt = static_cast<DType>(k);
    Array x = iota({4, 8}, dt, NamedSharding(m, P("a", "b")));
    auto v = x.to_vector<double>();
    for (int i = 0; i < 32; ++i) {
      double want = dt == bool_                 ? (i != 0)
                    : dt == int8 || dt == uint8 ? static_cast<double>(static_cast<int8_t>(i))
                                                : i;
      EXPECT_EQ(v[i], want) << dtype_name(dt) << " at " << i;
    }
    EXPECT_EQ(x.dtype(), dt);
    EXPECT_EQ(x.nbytes(), 32 * itemsize(dt));
  }
  Array b = array(std::vector<bool>{true, false, true});
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(scalar<int64_t>(7).item<int64_t>(), 7);
  EXPECT_EQ(array({1.5, 2.5}, {2, 1}).to_vector<float>(), (std::vector<float>{1.5f, 2.5f}));
}

TEST(Array, CreationOnShardings) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  MeshScope scope(m);
  EXPECT_EQ(arange(8, P("X")).to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(arange(8.f, P("X")).dtype(), float32);
  EXPECT_EQ(arange(1, 4, 0.5, float64).to_vector<double>(),
            (std::vector<double>{1, 1.5, 2, 2.5, 3, 3.5}));
  EXPECT_EQ(full({4, 2}, 2.5, float32, P("X", "Y")).to_vector<float>(),
            std::vector<float>(8, 2.5f));
  EXPECT_EQ(ones({2, 2}, int32, P("Y")).to_vector<int>(), std::vector<int>(4, 1));
  EXPECT_EQ(iota({8, 4}, float32, P("X", "Y")).to_vector<float>(), iota_vec(32));
  Array x = array(iota_vec(32), {8, 4}, P("Y", "X"));
  EXPECT_EQ(x.to_vector<float>(), iota_vec(32));
  EXPECT_EQ(zeros({0, 4}, float32, P("X")).size(), 0);
  Array h = device_put(iota_vec(8), P("X"));
  EXPECT_EQ(typeof(h).str(), "f32[8@X]");
  EXPECT_EQ(device_put(iota_vec(8), P(nullptr, "X"), {2, 4}).to_vector<float>(), iota_vec(8));
}

TEST(Array, AddressableShards) {
  Mesh m = make_mesh({4, 2}, {"x", "y"});
  Array x = array(iota_vec(16), {8, 2}, NamedSharding(m, P("x")));
  auto shards = x.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  for (int f = 0; f < 8; ++f) {
    int i = f / 2;
    EXPECT_EQ(shards[f].device.id, f);
    EXPECT_EQ(shards[f].replica_id, f % 2);
    EXPECT_EQ(index_str(shards[f].index),
              "(" + std::to_string(2 * i) + ":" + std::to_string(2 * i + 2) + ", :)");
    EXPECT_EQ(shards[f].data->shape(), (Shape{2, 2}));
    std::vector<float> want{4.f * i, 4.f * i + 1, 4.f * i + 2, 4.f * i + 3};
    EXPECT_EQ(shards[f].data->to_vector<float>(), want);
  }
}

TEST(Array, DevicePutErrors) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  EXPECT_THAT(
      [&] {
        try {
          device_put(zeros({8}), P("X"));
        } catch (const ValueError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("Please set a mesh via `set_mesh`"));
  MeshScope scope(m);
  // On Explicit axes the type refuses first (E23, a ValueError, as JAX's device_put).
  EXPECT_THROW(device_put(zeros({6, 4}), P("X")), ValueError);
  try {
    device_put(zeros({6, 4}), P("X"));
  } catch (const IndivisibleError& e) {
    ADD_FAILURE() << "E23 is not an IndivisibleError: " << e.what();
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[device_put] Sharding spec ('X',) implies that array axis 0 "
                                    "is partitioned 4 times, but does not evenly divide"));
  }
  EXPECT_THROW(device_put(zeros({8}), P("X", "Y")), ValueError);  // rank too small
  EXPECT_THROW(device_put(zeros({8}), P("Z")), ValueError);
  EXPECT_THROW(device_put(zeros({8}), Device{Platform::CPU, 99}), ValueError);
  EXPECT_THROW(Array().shape(), ValueError);
  EXPECT_THROW(zeros({4}).item<float>(), ValueError);
  EXPECT_THROW(reshard(zeros({8}), Placement{}), ValueError);
  EXPECT_THROW(zeros({-1}), ValueError);
}

TEST(Array, UnreducedDevicePutAndRead) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  // Replicated -> unreduced stores the value at coordinate 0 and zeros elsewhere.
  Array u = array(std::vector<float>{1, 2}, {2}, NamedSharding(m, P(nullptr, Unreduced{{"X"}})));
  auto shards = u.addressable_shards();
  for (int f = 0; f < 8; ++f)
    EXPECT_EQ(shards[f].data->to_vector<float>(),
              f / 2 == 0 ? (std::vector<float>{1, 2}) : (std::vector<float>{0, 0}));
  EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(Runtime, InitTwiceWithOtherCountFails) {
  EXPECT_NO_THROW(init({.num_cpu_devices = 8}));
  EXPECT_THROW(init({.num_cpu_devices = 4}), ValueError);
  EXPECT_EQ(device_count(), 8);
  synchronize();
}
