// Every damaged or mismatched checkpoint is a typed error naming the leaf and the file,
// never a crash or a silently wrong value: missing files, truncation at many points,
// flipped bytes anywhere, malformed or foreign sidecars, and `like` trees that differ.
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "nn/checkpoint_support.h"
#include "support/error_of.h"

using namespace tsr;
using namespace ckpt_test;
using nlohmann::json;

namespace {

using Tree = std::map<std::string, Array>;

class CheckpointErrors : public ScratchTest {
 protected:
  void SetUp() override {
    ScratchTest::SetUp();
    tree_ = {{"w", device_put(pattern({8, 4}, 1.f), NamedSharding(mesh_, P("data")))},
             {"b", device_put(pattern({4}, 2.f).astype(bfloat16), NamedSharding(mesh_, P()))}};
    dir_ = root_ / "c";
    ckpt::save(dir_, tree_);
  }
  Tree like() const {
    return {{"w", zeros({8, 4}, float32, devices()[1])}, {"b", zeros({4}, bfloat16, devices()[1])}};
  }
  // The restore's error (any tsr::Error), or "" after checking that it restored exactly.
  std::string restore_outcome() {
    try {
      Tree got = ckpt::restore(dir_, like());
      expect_bitwise(tree_["w"], got["w"], "w");
      expect_bitwise(tree_["b"], got["b"], "b");
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }
  Mesh mesh_ = make_mesh({8}, {"data"});
  Tree tree_;
  fs::path dir_;
};

TEST_F(CheckpointErrors, MissingDirectoryOrSidecar) {
  std::string e = error_of<ValueError>([&] { ckpt::restore(root_ / "nope", like()); });
  EXPECT_HAS(e, "[ckpt.restore] there is no checkpoint directory at");
  EXPECT_HAS(e, "nope");
  fs::remove(dir_ / "checkpoint.json");
  e = error_of<ValueError>([&] { ckpt::restore(dir_, like()); });
  EXPECT_HAS(e, "is not a complete checkpoint");
  EXPECT_HAS(e, "checkpoint.json");
  e = error_of<ValueError>([&] { ckpt::inspect(dir_); });
  EXPECT_HAS(e, "[ckpt.inspect]");
  fs::remove_all(dir_);
  ckpt::save(dir_, tree_);
  fs::remove(dir_ / "tensors.safetensors");
  EXPECT_HAS(error_of<ValueError>([&] { ckpt::restore(dir_, like()); }), "cannot be opened");
}

TEST_F(CheckpointErrors, TruncatedTensorFileAtManyPoints) {
  fs::path f = dir_ / "tensors.safetensors";
  const std::string whole = read_file(f);
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k)
    n = (n << 8) | static_cast<unsigned char>(whole[static_cast<size_t>(k)]);
  std::vector<size_t> cuts = {0,
                              3,
                              7,
                              8,
                              9,
                              8 + n / 2,
                              8 + n - 1,
                              8 + n,
                              8 + n + 1,
                              8 + n + 64,
                              whole.size() - 2,
                              whole.size() - 1};
  for (size_t cut : cuts) {
    write_file(f, whole.substr(0, cut));
    std::string e = error_of<ValueError>([&] { ckpt::restore(dir_, like()); });
    EXPECT_HAS(e, "tensors.safetensors");
    EXPECT_HAS(e, "truncated");
  }
  write_file(f, whole + "extra");
  EXPECT_HAS(error_of<ValueError>([&] { ckpt::restore(dir_, like()); }),
             "bytes after its last tensor");
  write_file(f, whole);
  EXPECT_EQ(restore_outcome(), "");
}

TEST_F(CheckpointErrors, FlippedBytesInTheTensorFileAlwaysRaise) {
  fs::path f = dir_ / "tensors.safetensors";
  const std::string whole = read_file(f);
  // Every byte of the length and about 40 more spread over the header and the data.
  std::vector<size_t> at = {0, 1, 2, 3, 4, 5, 6, 7};
  for (size_t i = 8; i < whole.size(); i += whole.size() / 40 + 1) at.push_back(i);
  at.push_back(whole.size() - 1);
  for (size_t i : at) {
    for (unsigned char mask : {0x01, 0x80}) {
      std::string bad = whole;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      write_file(f, bad);
      std::string e = restore_outcome();
      EXPECT_NE(e, "") << "flip of byte " << i << " went unnoticed";
      EXPECT_HAS(e, "tensors.safetensors");
    }
  }
  // A flip in the data names the leaf, its block and the checksums.
  std::string bad = whole;
  bad[bad.size() - 1] = static_cast<char>(bad[bad.size() - 1] ^ 0x10);
  write_file(f, bad);
  std::string e = error_of<ValueError>([&] { ckpt::restore(dir_, like()); });
  EXPECT_HAS(e, "leaf '['w']' is corrupt");
  EXPECT_HAS(e, "block '['w']#7'");
  EXPECT_HAS(e, "CRC-32");
  // Unless the caller trusts the storage: then the damaged value comes back.
  Tree got = ckpt::restore(dir_, like(), {.verify_checksums = false});
  EXPECT_FALSE(bytes_of(got["w"]) == bytes_of(tree_["w"]));
}

TEST_F(CheckpointErrors, FlippedBytesInTheSidecarRaiseOrChangeNothing) {
  fs::path f = dir_ / "checkpoint.json";
  const std::string whole = read_file(f);
  int raised = 0, tried = 0;
  for (size_t i = 0; i < whole.size(); i += 7) {
    std::string bad = whole;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    write_file(f, bad);
    ++tried;
    if (!restore_outcome().empty()) ++raised;
  }
  // Most flips are caught; the rest only touch what restore does not use (spec names).
  EXPECT_GT(raised, tried * 9 / 10) << raised << " of " << tried << " flips raised";
}

TEST_F(CheckpointErrors, MalformedSidecarAndUnknownVersion) {
  fs::path f = dir_ / "checkpoint.json";
  json side = json::parse(read_file(f));
  write_file(f, "{\"format\": \"tessera-checkpoint\", ");
  std::string e = error_of<ValueError>([&] { ckpt::restore(dir_, like()); });
  EXPECT_HAS(e, "is malformed: the file is not valid JSON");
  EXPECT_HAS(e, "checkpoint.json");
  json v = side;
  v["format_version"] = 99;
  write_file(f, v.dump());
  e = error_of<ValueError>([&] { ckpt::restore(dir_, like()); });
  EXPECT_HAS(e, "unknown format version. Got format_version 99");
  v = side;
  v["leaves"][0]["blocks"][0]["stop"] = json::array({5});
  write_file(f, v.dump());
  e = error_of<ValueError>([&] { ckpt::inspect(dir_); });
  EXPECT_HAS(e, "leaves[0] ('['b']').blocks[0] has an index box outside");
  v = side;
  v["leaves"][1]["blocks"].erase(2);
  write_file(f, v.dump());
  EXPECT_HAS(error_of<ValueError>([&] { ckpt::restore(dir_, like()); }),
             "has blocks that cover 28 of its 32 elements");
  v = side;
  v["leaves"][1]["dtype"] = 3;
  write_file(f, v.dump());
  EXPECT_HAS(error_of<ValueError>([&] { ckpt::restore(dir_, like()); }),
             "('['w']').dtype is not a string (got 3)");
}

TEST_F(CheckpointErrors, SidecarFromAnotherCheckpoint) {
  Tree other = {{"w", zeros({8, 4}, float32, NamedSharding(mesh_, P()))},
                {"b", zeros({4}, bfloat16, NamedSharding(mesh_, P()))}};
  ckpt::save(root_ / "o", other);
  fs::copy_file(root_ / "o" / "checkpoint.json", dir_ / "checkpoint.json",
                fs::copy_options::overwrite_existing);
  EXPECT_HAS(error_of<ValueError>([&] { ckpt::restore(dir_, like()); }), "lacks tensor '['w']'");
}

TEST_F(CheckpointErrors, LikeMustMatchPathsDTypesAndShapes) {
  Tree l = like();
  l["extra"] = zeros({2});
  std::string e = error_of<ValueError>([&] { ckpt::restore(dir_, l); });
  EXPECT_HAS(e, "like does not match the checkpoint at");
  EXPECT_HAS(e, "leaf '['extra']' (f32[2]) is not in the checkpoint");

  l = like();
  l.erase("b");
  e = error_of<ValueError>([&] { ckpt::restore(dir_, l); });
  EXPECT_HAS(e, "leaf '['b']' (bf16[4]) is in the checkpoint but not in like");
  EXPECT_HAS(e, "strict = false");
  Tree got = ckpt::restore(dir_, l, {.strict = false});
  expect_bitwise(tree_["w"], got["w"], "non-strict");

  l = like();
  l["w"] = zeros({8, 2});
  l["b"] = zeros({4}, float32);
  e = error_of<ValueError>([&] { ckpt::restore(dir_, l); });
  EXPECT_HAS(e, "leaf '['w']' is f32[8,4] in the checkpoint but f32[8,2] in like");
  EXPECT_HAS(e, "leaf '['b']' is bf16[4] in the checkpoint but f32[4] in like");
}

TEST_F(CheckpointErrors, SaveRefusesLeavesWithoutData) {
  std::string e = error_of<ValueError>([&] { ckpt::save(root_ / "x", Tree{{"a", Array()}}); });
  EXPECT_HAS(e, "[ckpt.save] leaf '['a']' is an empty Array");
  e = error_of<ValueError>([&] { ckpt::save(root_ / "x", Tree{{"a", shape_dtype_struct({2})}}); });
  EXPECT_HAS(e, "leaf '['a']' cannot be saved");
  EXPECT_FALSE(fs::exists(root_ / "x"));
  for (const auto& entry : fs::directory_iterator(root_))  // no temporary directory left
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos);
  EXPECT_HAS(error_of<ValueError>([&] { ckpt::save("", tree_); }), "the directory is empty");
}

}  // namespace
