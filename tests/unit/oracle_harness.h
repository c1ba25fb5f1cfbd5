#pragma once
// Runs an op sharded over several meshes, eagerly and under jit, against the
// unsharded single-device oracle; the op must not raise on any layout tried.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tsr/tsr.h"

namespace oracle {

/** Inputs as host values with a shape. */
struct Input {
  std::vector<double> values;
  tsr::Shape shape;
  tsr::DType dtype = tsr::float32;
};

/** Deterministic values 0.25 * ((7i + 3 + 5 salt) % 13 - 6) of `shape`. */
inline Input ramp(const tsr::Shape& shape, int salt = 0, tsr::DType dtype = tsr::float32) {
  Input in{{}, shape, dtype};
  int64_t n = tsr::numel(shape);
  for (int64_t i = 0; i < n; ++i)
    in.values.push_back(dtype == tsr::float32
                            ? 0.25 * ((i * 7 + 3 + salt * 5) % 13 - 6)
                            : static_cast<double>((i * 7 + 3 + salt * 5) % 13 - 6));
  return in;
}

/** One mesh: sizes and axis names. */
struct MeshCase {
  std::vector<int> sizes;
  std::vector<std::string> names;
};

/** The meshes tried: (1), (2), (4), (2,2), (8), (2,4); axes "x" then "y". */
inline std::vector<MeshCase> meshes() {
  return {{{1}, {"x"}},         {{2}, {"x"}}, {{4}, {"x"}},
          {{2, 2}, {"x", "y"}}, {{8}, {"x"}}, {{2, 4}, {"x", "y"}}};
}

inline bool mesh_names(const MeshCase& m, const tsr::PartitionSpec& p) {
  for (const auto& a : p.partition_axes())
    if (std::find(m.names.begin(), m.names.end(), a) == m.names.end()) return false;
  return true;
}

using Fn = std::function<tsr::Array(const std::vector<tsr::Array>&)>;

/** Checks `fn` on every mesh naming the axes of `specs` (and dividing the shapes),
 *  eager and jit, against `oracle_fn` (default fn) on one device. Returns the number
 *  of layouts run. `expect` (optional) checks each sharded result's type. */
inline int check(const std::string& what, const std::vector<Input>& inputs,
                 const std::vector<tsr::PartitionSpec>& specs, const Fn& fn,
                 const Fn& oracle_fn = {},
                 const std::function<void(const tsr::Array&)>& expect = {}) {
  using namespace tsr;
  std::vector<double> want;
  {
    Mesh one = make_mesh({1, 1}, {"x", "y"});
    MeshScope scope(one);
    std::vector<Array> base;
    for (const auto& in : inputs)
      base.push_back(array(in.values, in.shape, devices()[0]).astype(in.dtype));
    want = (oracle_fn ? oracle_fn : fn)(base).to_vector<double>();
  }
  int ran = 0;
  for (const auto& m : meshes()) {
    bool ok = true;
    for (const auto& p : specs) ok = ok && mesh_names(m, p);
    if (!ok) continue;
    Mesh mesh = make_mesh(m.sizes, m.names);
    MeshScope scope(mesh);
    std::vector<Array> in;
    try {
      for (size_t i = 0; i < inputs.size(); ++i)
        in.push_back(array(inputs[i].values, inputs[i].shape, Placement(specs.at(i)))
                         .astype(inputs[i].dtype));
    } catch (const ValueError& e) {
      // The mesh does not divide the shape (a type's E23 or a shard shape's E22).
      if (std::string(e.what()).find("evenly divide") == std::string::npos) throw;
      continue;
    }
    std::string label = what + " on mesh of " + std::to_string(mesh.size()) + " devices";
    Array eager, traced;
    try {
      eager = fn(in);
      traced = jit([&](const std::vector<Array>& a) { return std::vector<Array>{fn(a)}; })(in)[0];
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << ": raised " << e.what();
      continue;
    }
    EXPECT_EQ(typeof(eager).str(), typeof(traced).str()) << label << ": jit vs eager";
    for (const Array* r : {&eager, &traced}) {
      std::vector<double> got = r->to_vector<double>();
      EXPECT_EQ(got.size(), want.size()) << label;
      for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
        if (std::isnan(want[k])) {
          EXPECT_TRUE(std::isnan(got[k])) << label << " at " << k;
        } else if (std::isinf(want[k])) {
          EXPECT_EQ(got[k], want[k]) << label << " at " << k;
        } else {
          EXPECT_NEAR(got[k], want[k], 1e-4 * std::max(1.0, std::fabs(want[k])))
              << label << (r == &eager ? " (eager)" : " (jit)") << " at " << k;
        }
        if (::testing::Test::HasFailure()) return ran;
      }
      if (expect) expect(*r);
    }
    ++ran;
  }
  EXPECT_GT(ran, 0) << what << ": no mesh ran";
  return ran;
}

}  // namespace oracle
