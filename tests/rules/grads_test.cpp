// Gradients of every record (DESIGN §7): check_grads on one device in float64 (jvp
// vs finite differences, vjp vs jvp, to order 2), then on meshes (1), (2), (8),
// (2,4) with every spec combination the record lists: the sharded tangents and
// cotangents equal the one-device ones, and have the types the rules predict
// (a tangent has its output's type, a cotangent its input's cotangent type).
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "rules/record.h"
#include "support/check_grads.h"
#include "tsr/core/primitive.h"
#include "tsr/transforms/ad.h"

using namespace tsr;

namespace rules {
namespace {

// Record inputs for gradients: float32 becomes float64 (finite differences need the
// precision) and every float value is nudged by an index-dependent amount, so no
// input sits on a kink (abs at 0, ties of max), a step (floor at an integer) or so
// near a pole (1/x) that finite differences lose their precision.
Array make_grad(const In& in, int salt, const Placement& where) {
  std::vector<double> v = values(in, salt);
  bool fl = is_floating(in.dtype);
  if (fl)
    for (size_t i = 0; i < v.size(); ++i)
      v[i] += 0.02 * static_cast<double>((i * 37 + static_cast<size_t>(salt) * 11) % 97) / 97.0 +
              0.05;
  Array a = tsr::array(v, in.shape, where);
  DType d = in.dtype == float32 ? float64 : in.dtype;
  return d == float64 ? a : a.astype(d);
}

bool half(DType d) { return d == float16 || d == bfloat16; }

class Grads : public ::testing::TestWithParam<Record> {};

void expect_same(const Array& want, const Array& got, double tol, const std::string& what) {
  auto a = want.to_vector<double>(), b = got.to_vector<double>();
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (!(std::fabs(a[i] - b[i]) <= tol * (1 + std::fabs(a[i])))) {
      ADD_FAILURE() << what << ": element " << i << " one device " << a[i] << " sharded " << b[i];
      return;
    }
  }
}

TEST_P(Grads, MatchOneDeviceAndFiniteDifferences) {
  const Record& rec = GetParam();
  if (rec.refuses || rec.grad == Record::Grad::Skip) return;
  bool halfs = false;
  for (const auto& in : rec.inputs) halfs = halfs || half(in.dtype);
  double tol = halfs ? 2e-2 : 1e-9 + rec.rtol;
  // One device: check_grads, and the derivatives the sharded runs must match.
  std::vector<Array> base;
  Mesh one_device = make_mesh({1, 1}, {"x", "y"});
  std::optional<MeshScope> scope(std::in_place, one_device);
  for (size_t i = 0; i < rec.inputs.size(); ++i)
    base.push_back(make_grad(rec.inputs[i], static_cast<int>(i), Device{Platform::CPU, 0}));
  gradcheck::GradCheck gc;
  gc.fd = rec.grad == Record::Grad::Check && !halfs;
  if (halfs) gc.order = 1, gc.atol = 1e-1, gc.rtol = 1e-1;
  detail::FlatFn fn = rec.oracle ? rec.oracle : rec.fn;
  gradcheck::check_grads(fn, base, gc, rec.name + " on one device");
  if (::testing::Test::HasFailure()) return;
  gradcheck::Derivatives want = gradcheck::derivatives(fn, base, true);
  scope.reset();
  int ran = 0;
  for (const auto& m : meshes()) {
    Mesh mesh = make_mesh(m.sizes, m.names);
    MeshScope ms(mesh);
    for (const auto& combo : rec.specs) {
      bool ok = true;
      for (const auto& p : combo) ok = ok && mesh_has(m, p);
      if (!ok) continue;
      std::vector<Array> in;
      try {
        for (size_t i = 0; i < rec.inputs.size(); ++i)
          in.push_back(make_grad(rec.inputs[i], static_cast<int>(i),
                                 i < combo.size() ? Placement(combo[i]) : Placement(P())));
        (void)rec.fn(in);
      } catch (const Error&) {
        continue;  // the mesh does not divide the shape, or the rule refuses this layout
      }
      std::string what = rec.name + " on " + m.label + " with";
      for (const auto& p : combo) what += " " + p.repr();
      gradcheck::Derivatives got = gradcheck::derivatives(rec.fn, in, true);
      ASSERT_EQ(got.tangents.size(), want.tangents.size()) << what;
      for (size_t j = 0; j < got.tangents.size(); ++j)
        if (is_floating(got.tangents[j].dtype()))
          expect_same(want.tangents[j], got.tangents[j], tol, what + " jvp output " + std::to_string(j));
      for (size_t i = 0; i < got.cotangents.size(); ++i) {
        if (!is_floating(in[i].dtype())) continue;
        expect_same(want.cotangents[i], got.cotangents[i], tol,
                    what + " vjp input " + std::to_string(i));
        EXPECT_EQ(typeof(got.cotangents[i]).str(), detail::ct_type(typeof(in[i])).str())
            << what << ": the cotangent of input " << i << " has its cotangent type";
      }
      if (::testing::Test::HasFailure()) return;
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << rec.name << ": no sharded layout ran";
}

std::string record_name(const ::testing::TestParamInfo<Record>& info) {
  std::string s = info.param.name;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Table, Grads, ::testing::ValuesIn(all_records()), record_name);

}  // namespace
}  // namespace rules
