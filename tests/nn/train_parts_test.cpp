// tsr-train's host-side parts: the character dataset, the mesh flag, the plots.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "data.h"
#include "flags.h"
#include "plot.h"

namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("tsr_train_parts_" + std::to_string(::getpid()) + name);
  std::ofstream(p) << text;
  return p;
}

TEST(TrainData, VocabularyAndEntropy) {
  auto p = temp_file("a.txt", "ab\n\nba\r\naa\n");
  train::Dataset d(p.string());
  EXPECT_EQ(d.num_lines(), 3);
  ASSERT_EQ(d.vocab().size(), 3);  // '\n', 'a', 'b'
  EXPECT_EQ(d.vocab().chars[0], '\n');
  EXPECT_EQ(d.vocab().decode(d.vocab().encode("ab\nz")), "ab\n");
  // Stream "ab\nba\naa\n": a 4, b 2, \n 3 of 9.
  double h =
      -(4 / 9.0 * std::log(4 / 9.0) + 2 / 9.0 * std::log(2 / 9.0) + 3 / 9.0 * std::log(3 / 9.0));
  EXPECT_NEAR(d.unigram_entropy(), h, 1e-12);
  fs::remove(p);
}

TEST(TrainData, BatchesAreShiftedWindowsInASeededResumableOrder) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "w" + std::to_string(i) + "\n";
  auto p = temp_file("b.txt", text);
  train::Dataset d(p.string());
  const int B = 4, T = 8;
  auto b0 = d.batch(0, B, T, 7);
  ASSERT_EQ(b0.inputs.size(), size_t{B * T});
  for (int b = 0; b < B; ++b)
    for (int t = 0; t + 1 < T; ++t)
      EXPECT_EQ(b0.targets[size_t(b * T + t)], b0.inputs[size_t(b * T + t + 1)]);
  // Same seed and position: same batch; another seed: another order.
  EXPECT_EQ(d.batch(5, B, T, 7).inputs, d.batch(5, B, T, 7).inputs);
  EXPECT_NE(d.batch(5, B, T, 7).inputs, d.batch(5, B, T, 8).inputs);
  // One epoch visits every window once.
  int64_t n = d.num_windows(T);
  std::set<std::vector<int32_t>> seen;
  for (int64_t k = 0; k < n; ++k) seen.insert(d.batch(k, 1, T, 3).inputs);
  EXPECT_EQ(static_cast<int64_t>(seen.size()), n);
  fs::remove(p);
}

TEST(TrainData, MissingOrEmptyFileIsAnError) {
  EXPECT_THROW(train::Dataset("/nonexistent/words"), std::runtime_error);
  auto p = temp_file("c.txt", "\n\n");
  EXPECT_THROW(train::Dataset(p.string()), std::runtime_error);
  fs::remove(p);
}

TEST(TrainFlags, MeshShape) {
  EXPECT_EQ(train::parse_mesh_shape("8"), (std::vector<int>{8}));
  EXPECT_EQ(train::parse_mesh_shape("4x2"), (std::vector<int>{4, 2}));
  for (const char* bad : {"", "x", "4x", "0x2", "4x2x1", "a", "4y2"})
    EXPECT_THROW(train::parse_mesh_shape(bad), std::invalid_argument) << bad;
}

TEST(TrainPlot, CsvAndSvg) {
  std::vector<train::LossPoint> pts{{1, 4.0, 100}, {2, 3.0, 110}, {3, 2.5, 120}};
  fs::path dir = fs::temp_directory_path() / ("tsr_plot_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  train::write_loss_csv((dir / "loss.csv").string(), pts);
  train::write_loss_svg((dir / "loss.svg").string(), pts, "t<1>", 2.9, "unigram");
  std::stringstream csv, svg;
  csv << std::ifstream(dir / "loss.csv").rdbuf();
  svg << std::ifstream(dir / "loss.svg").rdbuf();
  EXPECT_EQ(csv.str(), "step,loss,tokens_per_s\n1,4,100.0\n2,3,110.0\n3,2.5,120.0\n");
  EXPECT_NE(svg.str().find("<svg"), std::string::npos);
  EXPECT_NE(svg.str().find("t&lt;1&gt;"), std::string::npos);  // escaped title
  EXPECT_NE(svg.str().find("unigram"), std::string::npos);
  EXPECT_NE(svg.str().find("<polyline"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
