// Gradients of every record (DESIGN §7): check_grads on one device in float64 (jvp
// vs finite differences, vjp vs jvp, to order 2), then on meshes (1), (2), (8),
// (2,4) with every spec combination the record lists: the sharded tangents and
// cotangents equal the one-device ones, and have the types the rules predict
// (a tangent has its output's type, a cotangent its input's cotangent type).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "rules/processes.h"
#include "rules/record.h"
#include "support/check_grads.h"
#include "tsr/core/primitive.h"
#include "tsr/transforms/ad.h"

using namespace tsr;

namespace rules {
namespace {

bool half(DType d) { return d == float16 || d == bfloat16; }

class Grads : public ::testing::TestWithParam<Record> {};

void expect_same(const Array& want, const Array& got, double tol, const std::string& what) {
  auto a = host_value(want), b = host_value(got);
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
  Mesh one_device = local_mesh({1, 1}, {"x", "y"});
  std::optional<MeshScope> scope(std::in_place, one_device);
  for (size_t i = 0; i < rec.inputs.size(); ++i)
    base.push_back(make_grad(rec.inputs[i], static_cast<int>(i), local_devices()[0]));
  gradcheck::GradCheck gc;
  gc.fd = rec.grad == Record::Grad::Check && !halfs;
  gc.fwd = rec.grad != Record::Grad::RevOnly;
  gc.rev = rec.grad != Record::Grad::FwdOnly;
  if (halfs) gc.order = 1, gc.atol = 1e-1, gc.rtol = 1e-1;
  detail::FlatFn fn = rec.oracle ? rec.oracle : rec.fn;
  gradcheck::check_grads(fn, base, gc, rec.name + " on one device");
  if (::testing::Test::HasFailure()) return;
  gradcheck::Derivatives want = gradcheck::derivatives(fn, base, gc.rev, gc.fwd);
  scope.reset();
  int ran =
      for_each_layout(rec, make_grad, [&](const std::vector<Array>& in, const std::string& what) {
        try {
          (void)rec.fn(in);
        } catch (const Error&) {
          return true;  // the rule refuses this layout (the Rules test checks how)
        }
        gradcheck::Derivatives got = gradcheck::derivatives(rec.fn, in, gc.rev, gc.fwd);
        EXPECT_EQ(got.tangents.size(), want.tangents.size()) << what;
        for (size_t j = 0; j < got.tangents.size() && j < want.tangents.size(); ++j)
          if (is_floating(got.tangents[j].dtype()))
            expect_same(want.tangents[j], got.tangents[j], tol,
                        what + " jvp output " + std::to_string(j));
        for (size_t i = 0; i < got.cotangents.size(); ++i) {
          if (!is_floating(in[i].dtype())) continue;
          expect_same(want.cotangents[i], got.cotangents[i], tol,
                      what + " vjp input " + std::to_string(i));
          EXPECT_EQ(typeof(got.cotangents[i]).str(), detail::ct_type(typeof(in[i])).str())
              << what << ": the cotangent of input " << i << " has its cotangent type";
        }
        return !::testing::Test::HasFailure();
      });
  EXPECT_GT(ran, 0) << rec.name << ": no sharded layout ran";
}

// Every registered primitive declares how it takes part in autodiff, and the
// records exercise every rule it claims: a jvp rule for each differentiable one and
// a transpose rule for each linear one (seen running, not just declared).
TEST(AdCoverage, EveryPrimitiveHasItsRules) {
  std::map<std::string, std::pair<detail::AdKind, std::string>> decl;
  for (const auto& [name, kind, why] : detail::ad_declarations()) {
    EXPECT_FALSE(decl.count(name)) << name << " declares its AD kind twice";
    decl[name] = {kind, why};
  }
  std::set<std::string> seen;
  {
    detail::RuleLog log;
    Mesh one_device = local_mesh({1, 1}, {"x", "y"});
    MeshScope scope(one_device);
    for (const auto& rec : all_records()) {
      if (rec.refuses || rec.grad == Record::Grad::Skip) continue;
      std::vector<Array> in;
      for (size_t i = 0; i < rec.inputs.size(); ++i)
        in.push_back(make_grad(rec.inputs[i], static_cast<int>(i), local_devices()[0]));
      try {
        (void)gradcheck::derivatives(rec.oracle ? rec.oracle : rec.fn, in,
                                     rec.grad != Record::Grad::FwdOnly,
                                     rec.grad != Record::Grad::RevOnly);
      } catch (const Error&) {
        // The Grads test reports it.
      }
    }
    seen.insert(log.seen().begin(), log.seen().end());
  }
  // Rules the records cannot reach, with where they are checked instead.
  static const std::map<std::string, std::string> elsewhere = {
      {"sharding_constraint",
       "binds on Auto axes only, and a grad replaying auto_axes' body outside its mesh scope is "
       "refused (E4): tests/unit/auto_propagation_test.cpp differentiates it on an Auto mesh"}};
  int nondiff = 0;
  for (const auto& p : detail::registered_primitives()) {
    if (elsewhere.count(p)) continue;
    auto it = decl.find(p);
    if (it == decl.end()) {
      ADD_FAILURE() << "primitive '" << p << "' declares no AD kind (declare_ad in its family)";
      continue;
    }
    auto [kind, why] = it->second;
    switch (kind) {
      case detail::AdKind::NonDifferentiable:
        ++nondiff;
        EXPECT_FALSE(why.empty()) << p << " is non-differentiable without a reason";
        break;
      case detail::AdKind::TransposeOnly:
        EXPECT_FALSE(why.empty()) << p << " has no jvp without a reason";
        EXPECT_TRUE(seen.count("transpose:" + p)) << "no record ran the transpose rule of " << p;
        break;
      case detail::AdKind::Linear:
        EXPECT_TRUE(seen.count("transpose:" + p)) << "no record ran the transpose rule of " << p;
        [[fallthrough]];
      case detail::AdKind::Differentiable:
        EXPECT_TRUE(seen.count("jvp:" + p)) << "no record ran the jvp rule of " << p;
        break;
    }
  }
  EXPECT_LT(nondiff, 45) << "the non-differentiable list should stay short";
}

INSTANTIATE_TEST_SUITE_P(Table, Grads, ::testing::ValuesIn(all_records()), record_name);

}  // namespace
}  // namespace rules
