#pragma once
// Shared by the optim tests: a small parameter tree with statics (as nn::Param will
// be) and host-side helpers to compare against formulas written out in doubles.
#include <gtest/gtest.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

#include <cmath>
#include <string>
#include <vector>

namespace optim_test {

/** A parameter as nn::Param: one leaf plus a static list of logical axis names. */
struct TParam {
  tsr::Array value;
  std::vector<std::string> names;
};
TSR_TREE(TParam, value, names);

/** A two-parameter model with a static config field. */
struct Model {
  TParam w;
  TParam b;
  int width = 0;
};
TSR_TREE(Model, w, b, width);

/** Host values of one tree: one vector per leaf, in leaf order. */
using Host = std::vector<std::vector<double>>;

/** The Model with these host values: w (2, 2) named (embed, mlp), b (3,) named (mlp). */
inline Model model_of(const Host& h, tsr::DType dt = tsr::float32) {
  return Model{{tsr::array(h[0], {2, 2}).astype(dt), {"embed", "mlp"}},
               {tsr::array(h[1], {3}).astype(dt), {"mlp"}},
               7};
}

/** The leaves of a tree as host doubles. */
template <class T>
Host host_of(const T& t) {
  Host h;
  for (const tsr::Array& a : tsr::tree::leaves(t)) h.push_back(a.to_vector<double>());
  return h;
}

/** Deterministic gradients for step t (different signs and magnitudes per element). */
inline Host grads_at(int t) {
  Host g{std::vector<double>(4), std::vector<double>(3)};
  for (size_t l = 0; l < g.size(); ++l)
    for (size_t j = 0; j < g[l].size(); ++j)
      g[l][j] = std::sin(1.0 + static_cast<double>(j) + 3.0 * static_cast<double>(l) + 7.0 * t) *
                (1.0 + static_cast<double>(j));
  return g;
}

/** Starting parameters. */
inline Host params0() { return {{0.5, -1.0, 2.0, 0.25}, {1.5, -0.5, 0.0}}; }

/** EXPECTs every element of got within atol + rtol * |want| of want. */
inline void expect_near(const Host& want, const Host& got, const std::string& what,
                        double rtol = 2e-6, double atol = 1e-7) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t l = 0; l < want.size(); ++l) {
    ASSERT_EQ(want[l].size(), got[l].size()) << what << " leaf " << l;
    for (size_t j = 0; j < want[l].size(); ++j)
      EXPECT_NEAR(want[l][j], got[l][j], atol + rtol * std::abs(want[l][j]))
          << what << " leaf " << l << " element " << j;
  }
}

}  // namespace optim_test
