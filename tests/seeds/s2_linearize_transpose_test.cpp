// Scenario S2 (SCENARIOS.md, manual-spmd §5.7): linearize + linear_transpose inside a
// shard_map over a 2-device mesh, at a primal shared by every device. With pvary on
// the primal: the hand-computed values, eagerly and under jit, equal to the same
// computation on one device without shard_map; without it: the error naming pvary;
// with check_vma=false: no types to disagree, the same values.
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array f(const Array& x) { return mean(x * x); }

// m(p, t) of §5.7, p closed over; `fix` pvary's it first.
Array m(const Array& p, const Array& t, bool fix) {
  Array q = fix ? pvary(p, "x") : p;
  auto [out_p, fwd] = linearize(f, q);
  Array out_t = fwd(t);
  auto bwd = linear_transpose(fwd, q);
  return std::get<0>(bwd(out_t));
}

class S2 : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope{mesh};
  Array p = array<float>({1.f});
  auto sm(bool fix, bool check_vma = true) {
    return shard_map([this, fix](const Array& t) { return m(p, t, fix); },
                     {.in_specs = P("x"), .out_specs = P("x"), .check_vma = check_vma});
  }
};

TEST_F(S2, WithPvaryGivesFourOnEachDevice) {
  // f(p) = mean(p^2): out_t = 2 p t = 2, bwd(out_t) = 2 p out_t = 4 per device.
  EXPECT_EQ(sm(true)(device_put(ones({2}), P("x"))).to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(jit(sm(true))(device_put(ones({2}), P("x"))).to_vector<float>(),
            (std::vector<float>{4, 4}));
  // Per-device tangents: 4 p^2 t.
  Array t = device_put(array<float>({1.f, 2.f}), P("x"));
  EXPECT_EQ(sm(true)(t).to_vector<float>(), (std::vector<float>{4, 8}));
}

TEST_F(S2, EqualsTheComputationOnOneDevice) {
  Array t = device_put(array<float>({1.5f, -2.f}), P("x"));
  std::vector<float> got = sm(true)(t).to_vector<float>();
  std::vector<float> tv = t.to_vector<float>();
  for (size_t d = 0; d < 2; ++d) {
    Array one = m(array<float>({1.f}), array<float>({tv[d]}), false);
    EXPECT_FLOAT_EQ(got[d], one.to_vector<float>()[0]) << "device " << d;
  }
}

TEST_F(S2, WithoutPvaryTheErrorNamesTheFix) {
  std::string e = error_of<ValueError>([&] { (void)sm(false)(device_put(ones({2}), P("x"))); });
  EXPECT_HAS(e,
             "[linearize] linearized function called on tangent values inconsistent with the "
             "original primal values:\nGot tangent aval f32[1]{V:x} for primal aval f32[1] but "
             "expected f32[1]");
  EXPECT_HAS(e, "the manual axis types do not match");
  EXPECT_HAS(e,
             "This might be fixed by:\n  * applying `tsr::pvary(..., ('x',))` to the primal "
             "value passed to `tsr::linearize`;");
  e = error_of<ValueError>([&] { (void)jit(sm(false))(device_put(ones({2}), P("x"))); });
  EXPECT_HAS(e, "tsr::pvary(..., ('x',))");
}

TEST_F(S2, CheckVmaFalseRunsWithoutPvary) {
  // No vma is tracked, so p and t have the same type and the program runs (§5.7).
  EXPECT_EQ(sm(false, false)(device_put(ones({2}), P("x"))).to_vector<float>(),
            (std::vector<float>{4, 4}));
}

}  // namespace
