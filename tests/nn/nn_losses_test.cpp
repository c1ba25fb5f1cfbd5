// Cross-entropy (its custom backward against the plain formula and host loops) and mse.
#include <gtest/gtest.h>

#include <tsr/nn.h>
#include <tsr/tsr.h>

#include <cmath>

#include "nn/nn_reference.h"
#include "support/error_of.h"

using namespace tsr;
using nnref::expect_close;
using nnref::host;
using nnref::wavy;

namespace {

// optax's formula with plain ops: logsumexp - take_along_axis (autodiff's backward).
Array xent_plain(const Array& logits, const Array& labels) {
  Array picked = squeeze(take_along_axis(logits, expand_dims(labels, -1), -1), -1);
  return logsumexp(logits, -1) - picked;
}

}  // namespace

TEST(NnLosses, CrossEntropyMatchesHostLoops) {
  Array logits = wavy({2, 3, 7}, 4.0, 1) + 50.f;  // large logits: logsumexp keeps it stable
  std::vector<int> lab = {0, 6, 3, 3, 1, 5};
  Array labels = array(lab, {2, 3});
  std::vector<double> want = nnref::xent(nnref::rows(host(logits)), lab);
  Array got = nn::softmax_cross_entropy_with_integer_labels(logits, labels);
  EXPECT_EQ(got.shape(), (Shape{2, 3}));
  expect_close(nnref::T{{2, 3}, want}, got, 1e-5, 1e-5, "xent");
}

TEST(NnLosses, CrossEntropyGradientIsSoftmaxMinusOneHot) {
  Array logits = wavy({4, 9}, 3.0, 2), c = wavy({4}, 1.0, 3);
  std::vector<int> lab = {8, 0, 4, 4};
  Array labels = array(lab, {4});
  auto weighted = [&](auto loss) {
    return [&, loss](const Array& l) { return sum(loss(l, labels) * c); };
  };
  Array g = grad(weighted(nn::softmax_cross_entropy_with_integer_labels))(logits);
  Array g_plain = grad(weighted(xent_plain))(logits);
  expect_close(g_plain, g, 1e-6, 1e-5, "vs plain formula");
  // Host: c_i (softmax(logits_i) - one_hot(label_i)).
  nnref::T lh = host(logits), ch = host(c), want = lh;
  for (size_t i = 0; i < 4; ++i) {
    double mx = -1e300, z = 0;
    for (size_t j = 0; j < 9; ++j) mx = std::max(mx, lh[i * 9 + j]);
    for (size_t j = 0; j < 9; ++j) z += std::exp(lh[i * 9 + j] - mx);
    for (size_t j = 0; j < 9; ++j)
      want[i * 9 + j] =
          ch[i] * (std::exp(lh[i * 9 + j] - mx) / z - (static_cast<int>(j) == lab[i]));
  }
  expect_close(want, g, 1e-6, 1e-5, "vs host");
  // The custom backward is what runs: softmax - one_hot, no scatter (autodiff of the
  // plain formula scatters into the label positions).
  EXPECT_EQ(make_jaxpr(grad(weighted(nn::softmax_cross_entropy_with_integer_labels)), logits)
                .find("scatter"),
            std::string::npos);
  EXPECT_HAS(make_jaxpr(grad(weighted(xent_plain)), logits), "scatter_add");
  Array gj = jit(grad(weighted(nn::softmax_cross_entropy_with_integer_labels)))(logits);
  expect_close(want, gj, 1e-6, 1e-5, "jit");
}

TEST(NnLosses, CrossEntropyErrors) {
  Array logits = zeros({2, 5});
  EXPECT_HAS(error_of<TypeError>(
                 [&] { (void)nn::softmax_cross_entropy_with_integer_labels(logits, zeros({2})); }),
             "[nn.softmax_cross_entropy_with_integer_labels] labels must be integers. Got f32[2]");
  EXPECT_HAS(error_of<ValueError>([&] {
               (void)nn::softmax_cross_entropy_with_integer_labels(logits, zeros({5}, int32));
             }),
             "labels must have logits' shape without its last (class) dimension. Got logits "
             "f32[2,5] and labels i32[5]");
  EXPECT_HAS(error_of<TypeError>([&] {
               (void)nn::softmax_cross_entropy_with_integer_labels(zeros({2, 5}, int32),
                                                                   zeros({2}, int32));
             }),
             "logits must be floating point. Got i32[2,5]");
}

TEST(NnLosses, MeanSquaredError) {
  Array a = array({1.f, 2.f, 3.f, 4.f}, {2, 2}), b = array({1.f, 0.f, 0.f, 4.f}, {2, 2});
  EXPECT_FLOAT_EQ(nn::mse(a, b).item<float>(), (0 + 4 + 9 + 0) / 4.f);
  Array g = grad([&](const Array& p) { return nn::mse(p, b); })(a);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0.f, 1.f, 1.5f, 0.f}));  // 2 (a - b) / 4
  EXPECT_HAS(error_of<ValueError>([&] { (void)nn::mse(a, ones({4})); }),
             "[nn.mse] pred and target must have the same shape. Got f32[2,2] and f32[4]");
}
