// make_array_from_callback (jax.make_array_from_callback), which restore builds on:
// one call per distinct index, blocks already on their device shared, errors typed.
#include <map>
#include <string>
#include <vector>

#include "nn/checkpoint_support.h"
#include "support/error_of.h"
#include "tsr/core/array_impl.h"

using namespace tsr;
using namespace ckpt_test;

namespace {

TEST(MakeArrayFromCallback, BuildsEachBlockFromItsIndex) {
  Mesh m = make_mesh({4, 2}, {"x", "y"});
  Array whole = pattern({8, 6}, 0.5f);
  for (const PartitionSpec& spec : {P("x", "y"), P("x"), P(), P("y")}) {
    int calls = 0;
    Array a = make_array_from_callback(
        {8, 6}, float32, NamedSharding(m, spec), [&](const ShardIndex& idx) {
          ++calls;
          return slice(whole, {idx[0].start, idx[1].start}, {idx[0].stop, idx[1].stop});
        });
    expect_bitwise(whole, a, spec.repr());
    EXPECT_EQ(a.sharding(), NamedSharding(m, spec));
    std::map<std::string, int> distinct;
    for (const auto& s : a.addressable_shards()) distinct[index_str(s.index)]++;
    EXPECT_EQ(calls, static_cast<int>(distinct.size())) << spec.repr();
  }
  std::string e = error_of<ValueError>([&] {
    make_array_from_callback({8, 6}, float32, NamedSharding(m, P(nullptr, "x")),
                             [&](const ShardIndex&) { return whole; });
  });
  EXPECT_HAS(e, "[make_array_from_callback]");
}

TEST(MakeArrayFromCallback, SharesABlockAlreadyOnItsDevice) {
  Mesh m = make_mesh({8}, {"data"});
  std::vector<Array> made;
  Array a = make_array_from_callback(
      {16}, int32, NamedSharding(m, P("data")), [&](const ShardIndex& idx) {
        int d = static_cast<int>(idx[0].start / 2);
        made.push_back(
            arange(idx[0].start, idx[0].stop, 1, int32, m.devices()[static_cast<size_t>(d)]));
        return made.back();
      });
  EXPECT_EQ(a.to_vector<int32_t>(), arange(16).to_vector<int32_t>());
  auto shards = a.addressable_shards();
  ASSERT_EQ(made.size(), shards.size());
  for (size_t i = 0; i < shards.size(); ++i)  // the very buffers the callback made
    EXPECT_EQ(shards[i].data->impl()->buffers.at(0), made[i].impl()->buffers.at(0));
  // On a PartitionSpec with the context mesh, and the spec as given shows in sharding().
  MeshScope scope(m);
  Array b = make_array_from_callback({16, 2}, float32, P("data"), [&](const ShardIndex& idx) {
    return zeros({idx[0].stop - idx[0].start, 2});
  });
  EXPECT_EQ(b.sharding().spec(), P("data"));
}

TEST(MakeArrayFromCallback, RejectsWrongBlocks) {
  Mesh m = make_mesh({8}, {"data"});
  NamedSharding s(m, P("data"));
  std::string e = error_of<ValueError>([&] {
    make_array_from_callback({16}, float32, s, [](const ShardIndex&) { return zeros({3}); });
  });
  EXPECT_HAS(e,
             "[make_array_from_callback] the callback's block for index (0:2,) has the wrong type");
  EXPECT_HAS(e, "Got f32[3]; expected f32[2]");
  e = error_of<ValueError>([&] {
    make_array_from_callback({16}, float32, s, [](const ShardIndex&) { return zeros({2}, int32); });
  });
  EXPECT_HAS(e, "Got i32[2]; expected f32[2]");
  e = error_of<ValueError>([&] {
    make_array_from_callback({16}, float32, s, [](const ShardIndex&) { return Array(); });
  });
  EXPECT_HAS(e, "returned an empty Array for index (0:2,)");
  e = error_of<ValueError>([&] { make_array_from_callback({16}, float32, s, nullptr); });
  EXPECT_HAS(e, "the callback is empty");
}

}  // namespace
