// Save/restore round trips over tree kinds and dtypes, the on-disk format (a real
// safetensors file plus the sidecar), inspect, atomic replacement and the step helpers.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/checkpoint_support.h"
#include "support/error_of.h"

using namespace tsr;
using namespace ckpt_test;
using nlohmann::json;

namespace {

struct Layer {
  Array w;
  Array b;
  int width = 0;    // static: not saved, taken from `like`
  std::string act;  // static
};
TSR_TREE(Layer, w, b, width, act);

struct Model {
  std::vector<Layer> layers;
  std::map<std::string, Array> extra;
  std::optional<Array> scale;
  double lr = 0;
};
TSR_TREE(Model, layers, extra, scale, lr);

Model make_model(float seed, const Placement& rows) {
  Model m;
  for (int i = 0; i < 2; ++i)
    m.layers.push_back({device_put(pattern({8, 4}, seed + static_cast<float>(i)), rows),
                        device_put(pattern({4}, seed), P()), 4, "relu"});
  m.extra["count"] = device_put(scalar<int64_t>(123456789012345LL), P());
  m.extra["mask"] = device_put(
      array(std::vector<bool>{true, false, true, true, false, true, false, false}), rows);
  m.scale = device_put(pattern({8, 2}, seed).astype(float16), rows);
  m.lr = 0.1;
  return m;
}

class CheckpointFormat : public ScratchTest {
 protected:
  Mesh mesh_ = make_mesh({8}, {"data"});
  MeshScope scope_{mesh_};
};

TEST_F(CheckpointFormat, RoundTripsNestedTreesWithStatics) {
  Model m = make_model(1.f, P("data"));
  ckpt::save(root_ / "m", m);
  Model like = make_model(9.f, P("data"));
  like.lr = 0.5;
  Model got = ckpt::restore(root_ / "m", like);
  auto a = tree::leaves(m), b = tree::leaves(got);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) expect_bitwise(a[i], b[i], "leaf " + std::to_string(i));
  EXPECT_EQ(got.lr, 0.5);  // statics come from like
  EXPECT_EQ(got.layers[1].act, "relu");
  EXPECT_EQ(tree::paths(got), tree::paths(m));
}

TEST_F(CheckpointFormat, EveryDTypeRoundTrips) {
  std::vector<DType> dts = {bool_,  int8,   int16,   int32,    int64,   uint8,  uint16,
                            uint32, uint64, float16, bfloat16, float32, float64};
  std::vector<Array> xs;
  for (DType t : dts) xs.push_back(device_put((iota({16, 3}) - 20.f).astype(t), P("data")));
  ckpt::save(root_ / "d", xs);
  std::vector<Array> like;
  for (const auto& x : xs) like.push_back(zeros_like(x));
  auto got = ckpt::restore(root_ / "d", like);
  for (size_t i = 0; i < xs.size(); ++i) expect_bitwise(xs[i], got[i], dtype_name(dts[i]));
}

TEST_F(CheckpointFormat, EmptyScalarAndSingleLeafTrees) {
  ckpt::save(root_ / "e", std::vector<Array>{zeros({0, 8}), scalar(2.5f)});
  auto got = ckpt::restore(root_ / "e", std::vector<Array>{zeros({0, 8}), scalar(0.f)});
  EXPECT_EQ(got[0].shape(), (Shape{0, 8}));
  EXPECT_EQ(got[1].item<float>(), 2.5f);
  Array one = device_put(pattern({16}, 2.f), P("data"));
  ckpt::save(root_ / "one", one);  // the tree is a single Array: its path is ""
  expect_bitwise(one, ckpt::restore(root_ / "one", zeros_like(one)), "single leaf");
  ckpt::save(root_ / "none", std::vector<Array>{});
  EXPECT_TRUE(ckpt::restore(root_ / "none", std::vector<Array>{}).empty());
}

TEST_F(CheckpointFormat, WritesRealSafetensors) {
  Array w = device_put(pattern({16, 2}, 1.f), P("data"));
  Array r = device_put(pattern({3}, 2.f).astype(bfloat16), P());
  ckpt::save(root_ / "s", std::map<std::string, Array>{{"w", w}, {"r", r}});
  std::string f = read_file(root_ / "s" / "tensors.safetensors");
  ASSERT_GE(f.size(), 8u);
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(f[static_cast<size_t>(k)]);
  EXPECT_EQ((8 + n) % 8, 0u);
  json h = json::parse(f.substr(8, n));
  EXPECT_EQ(h["__metadata__"]["format"], "tessera-checkpoint");
  EXPECT_EQ(h.size(), 1u + 8u + 1u);  // metadata, 8 blocks of w, r once
  EXPECT_EQ(h["['r']"]["dtype"], "BF16");
  EXPECT_EQ(h["['r']"]["shape"], json::array({3}));
  EXPECT_EQ(h["['w']#3"]["dtype"], "F32");
  EXPECT_EQ(h["['w']#3"]["shape"], json::array({2, 2}));
  // w#3's bytes are rows 6..7 of w, raw little-endian float32.
  auto off = h["['w']#3"]["data_offsets"];
  std::string got =
      f.substr(8 + n + off[0].get<size_t>(), off[1].get<size_t>() - off[0].get<size_t>());
  std::vector<float> all = w.to_vector<float>();
  EXPECT_EQ(got, std::string(reinterpret_cast<const char*>(all.data() + 6 * 2), 16));
  EXPECT_EQ(f.size(), 8 + n + 16 * 2 * 4 + 3 * 2);  // every byte stored once

  json side = json::parse(read_file(root_ / "s" / "checkpoint.json"));
  EXPECT_EQ(side["format_version"], 1);
  EXPECT_EQ(side["mesh"]["axis_names"], json::array({"data"}));
  EXPECT_EQ(side["mesh"]["axis_types"], json::array({"Explicit"}));
  const json& lw = side["leaves"][1];
  EXPECT_EQ(lw["path"], "['w']");
  EXPECT_EQ(lw["spec"], json::parse(R"(["data", null])"));
  EXPECT_EQ(lw["blocks"][3]["start"], json::array({6, 0}));
  EXPECT_EQ(lw["blocks"][3]["stop"], json::array({8, 2}));
  EXPECT_EQ(lw["blocks"][3]["nbytes"], 16);
}

TEST_F(CheckpointFormat, InspectDescribesTheCheckpoint) {
  Mesh m2 = make_mesh({4, 2}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
  std::map<std::string, Array> t = {
      {"w", device_put(pattern({8, 4}, 1.f), NamedSharding(m2, P("x", "y")))},
      {"b", device_put(pattern({4}, 1.f), devices()[2])}};
  ckpt::save(root_ / "i", t);
  ckpt::Info info = ckpt::inspect(root_ / "i");
  EXPECT_EQ(info.format_version, ckpt::kFormatVersion);
  EXPECT_EQ(info.mesh.axis_names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(info.mesh.axis_sizes, (std::vector<int>{4, 2}));
  EXPECT_EQ(info.mesh.axis_types[1], AxisType::Auto);
  ASSERT_EQ(info.leaves.size(), 2u);
  const auto& b = info.leaves[0];
  EXPECT_EQ(b.path, "['b']");
  EXPECT_EQ(b.mesh.device_ids, std::vector<int>{2});
  const auto& w = info.leaves[1];
  EXPECT_EQ(w.dtype, float32);
  EXPECT_EQ(w.shape, (Shape{8, 4}));
  EXPECT_EQ(w.spec, P("x", "y"));
  EXPECT_EQ(w.blocks.size(), 8u);
  std::string s = info.str();
  EXPECT_HAS(s, "('x': 4, 'y': 2)");
  EXPECT_HAS(s, "['w']");
  EXPECT_HAS(s, "f32(8, 4)");
  EXPECT_HAS(s, "P('x', 'y')");
  EXPECT_HAS(s, "8 blocks");
  EXPECT_HAS(s, "1 block on (1 device)");
}

TEST_F(CheckpointFormat, UnreducedLeavesAreSavedReduced) {
  Mesh m2 = make_mesh({4, 2}, {"x", "y"});
  // No -0 or NaN here: the logical value is a sum over y, and -0 + 0 is +0.
  Array part = device_put(iota({8, 4}) - 5.f, NamedSharding(m2, P("x", nullptr)));
  Array u = reshard(part, NamedSharding(m2, P("x", nullptr, Unreduced{{"y"}})));
  ckpt::save(root_ / "u", std::vector<Array>{u});
  auto got = ckpt::restore(root_ / "u", std::vector<Array>{zeros_like(part)});
  expect_bitwise(part, u, "unreduced input");
  expect_bitwise(part, got[0], "unreduced");
  EXPECT_EQ(ckpt::inspect(root_ / "u").leaves[0].blocks.size(), 4u);
}

TEST_F(CheckpointFormat, ReplacesAnOlderCheckpointAtomically) {
  std::vector<Array> a = {device_put(pattern({8}, 1.f), P("data"))};
  std::vector<Array> b = {device_put(pattern({8}, 2.f), P("data"))};
  ckpt::save(root_ / "c", a);
  ckpt::save(root_ / "c", b);
  expect_bitwise(b[0], ckpt::restore(root_ / "c", a)[0], "replaced");
  // Nothing but the checkpoint remains next to it (no .tmp-* or .old-* directories).
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root_)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"c"});
  std::string e = error_of<ValueError>([&] { ckpt::save(root_ / "c", a, {.overwrite = false}); });
  EXPECT_HAS(e, "[ckpt.save] a checkpoint already exists");
  // A directory that is not a checkpoint is never replaced.
  fs::create_directories(root_ / "mine");
  write_file(root_ / "mine" / "notes.txt", "keep me");
  e = error_of<ValueError>([&] { ckpt::save(root_ / "mine", a); });
  EXPECT_HAS(e, "is a directory that is not a checkpoint");
  EXPECT_EQ(read_file(root_ / "mine" / "notes.txt"), "keep me");
}

TEST_F(CheckpointFormat, SaveStepKeepsTheNewest) {
  std::vector<Array> t = {device_put(pattern({8}, 1.f), P("data"))};
  EXPECT_EQ(ckpt::latest_step(root_ / "run"), std::nullopt);
  for (int64_t s : {10, 20, 30, 40}) {
    fs::path d = ckpt::save_step(root_ / "run", s, t, 2);
    EXPECT_EQ(d, root_ / "run" / ckpt::step_dir("", s));
  }
  EXPECT_EQ(ckpt::step_dir("r", 123).filename(), "step_00000123");
  EXPECT_EQ(ckpt::all_steps(root_ / "run"), (std::vector<int64_t>{30, 40}));
  EXPECT_EQ(ckpt::latest_step(root_ / "run"), 40);
  // A rewind keeps the step just saved even though it is older.
  ckpt::save_step(root_ / "run", 5, t, 2);
  EXPECT_EQ(ckpt::all_steps(root_ / "run"), (std::vector<int64_t>{5, 30, 40}));
  // An unfinished save (no sidecar) is not a step.
  fs::create_directories(root_ / "run" / "step_00000099");
  EXPECT_EQ(ckpt::latest_step(root_ / "run"), 40);
  ckpt::save_step(root_ / "run", 50, t);  // keep = 0: keep all
  EXPECT_EQ(ckpt::all_steps(root_ / "run").size(), 4u);
  EXPECT_HAS(error_of<ValueError>([&] { ckpt::save_step(root_ / "run", 60, t, -1); }),
             "keep is negative");
  EXPECT_HAS(error_of<ValueError>([&] { ckpt::step_dir(root_, -1); }), "step is negative");
  EXPECT_FALSE(fs::exists(ckpt::step_dir(root_ / "run", 60)));
}

}  // namespace
