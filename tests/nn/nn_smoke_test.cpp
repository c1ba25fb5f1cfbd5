#include <gtest/gtest.h>
#include <tsr/nn.h>
#include <tsr/tsr.h>
using namespace tsr;
TEST(NnSmoke, Builds) {
  auto m = nn::Transformer::init(nn::TransformerConfig::tiny(256), random::key(0));
  std::cout << nn::param_count(m) << "\n";
  Array tok = zeros({2, 8}, int32);
  Array y = nn::apply(m, tok);
  std::cout << typeof(y) << "\n";
}
