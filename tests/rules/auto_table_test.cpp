// Every record once more on all-Auto meshes with only the inputs annotated: the Auto
// propagation pass (docs/design/0013) must give the one-device values, and its layouts
// must move no more bytes than the Explicit version of the same record and specs. Then
// on a mixed mesh: values, and no sharding along an Explicit axis the type lacks.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <sstream>

#include "rules/processes.h"
#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {

// Bytes per device that `.local` says move between devices: reshard steps other than
// local copies (their output block) and collective steps ("N B per device").
double comm_bytes(const std::string& local) {
  double total = 0;
  std::istringstream is(local);
  std::string line;
  while (std::getline(is, line)) {
    auto per = line.find(" B per device");
    if (per != std::string::npos) {
      auto start = line.rfind(' ', per - 1);
      total += std::stod(line.substr(start + 1, per - start - 1));
      continue;
    }
    if (line.find(" = reshard ") == std::string::npos || line.find("[local copy]") != line.npos)
      continue;
    // "  %7:f32(4, 16) = reshard ..."
    auto colon = line.find(':'), paren = line.find('(', colon), close = line.find(')', paren);
    std::string dt = line.substr(colon + 1, paren - colon - 1);
    double item = dt == "bool" ? 1 : std::stod(dt.substr(dt.find_first_of("0123456789"))) / 8;
    if (dt.rfind("c", 0) == 0) item = std::stod(dt.substr(1)) / 8;
    double n = 1;
    std::string dims = line.substr(paren + 1, close - paren - 1);
    std::istringstream ds(dims);
    std::string tok;
    while (std::getline(ds, tok, ','))
      if (tok.find_first_of("0123456789") != std::string::npos) n *= std::stod(tok);
    total += n * item;
  }
  return total;
}

void expect_close(const std::vector<double>& want, const std::vector<double>& got, double rtol,
                  const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(want[i], got[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(want[i], got[i], rtol * std::max(1.0, std::fabs(want[i]))) << what << " at " << i;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

class AutoTable : public ::testing::TestWithParam<Record> {};

TEST_P(AutoTable, MatchesOracleWithNoMoreCommThanExplicit) {
  const Record& rec = GetParam();
  if (rec.refuses) GTEST_SKIP() << "a refusal record (Auto mode runs no rule)";
  std::vector<std::vector<double>> want;
  {
    MeshScope scope(local_mesh({1, 1}, {"x", "y"}));
    std::vector<Array> base;
    for (size_t i = 0; i < rec.inputs.size(); ++i)
      base.push_back(make(rec.inputs[i], static_cast<int>(i), local_devices()[0]));
    for (const auto& o : rec.oracle ? rec.oracle(base) : rec.fn(base))
      want.push_back(host_value(o));
  }
  int ran = 0, compared = 0;
  for (const auto& m : meshes()) {
    if (m.sizes.size() == 1 && m.sizes[0] == 1) continue;
    std::vector<AxisType> autos(m.sizes.size(), AxisType::Auto);
    Mesh am = case_mesh(m.sizes, m.names, autos);
    Mesh em = case_mesh(m.sizes, m.names);
    for (const auto& combo : rec.specs) {
      bool ok = true;
      for (const auto& p : combo) ok = ok && mesh_has(m, p) && p.unreduced().empty();
      if (!ok) continue;
      auto inputs = [&](const Mesh& mesh) {
        std::vector<Array> in;
        for (size_t i = 0; i < rec.inputs.size(); ++i)
          in.push_back(make(rec.inputs[i], static_cast<int>(i),
                            NamedSharding(mesh, i < combo.size() ? combo[i] : P())));
        return in;
      };
      std::string what = rec.name + " on Auto " + m.label + " with";
      for (const auto& p : combo) what += " " + p.repr();
      std::vector<Array> in;
      try {
        in = inputs(am);
      } catch (const IndivisibleError&) {
        continue;
      } catch (const ValueError& e) {
        // An input made by resharding onto a spec that names an Auto axis (§13.2), or a
        // type that does not divide (E23).
        std::string m = e.what();
        if (m.find("Auto") == std::string::npos && m.find("evenly divide") == std::string::npos)
          throw;
        continue;
      }
      auto f = jit([&](const std::vector<Array>& a) { return rec.fn(a); });
      std::vector<Array> got;
      std::string local;
      {
        MeshScope scope(am);
        try {
          got = f(in);
        } catch (const ValueError& e) {
          // out_sharding arguments naming mesh axes are refused on Auto axes (§14).
          std::string msg = e.what();
          if (msg.find("Auto") == std::string::npos) throw;
          continue;
        }
        local = f.lower(in).local;
      }
      ++ran;
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t k = 0; k < want.size(); ++k) {
        expect_close(want[k], host_value(got[k]), rec.rtol, what);
        if (::testing::Test::HasFailure()) return;
      }
      // The Explicit version: same specs as types (skipped where its rule refuses).
      // shard_map records name their manual axes from the mesh: on Auto meshes they
      // run another program, so only their values are compared.
      if (local.find("shard_map boundary") != std::string::npos) continue;
      // A record that constrains its result to its input's type (replicated on Auto
      // axes) asks for the movement.
      if (rec.name == "with_sharding_constraint") continue;
      if (!rec.auto_comm_why.empty()) continue;
      std::string elocal;
      try {
        MeshScope scope(em);
        elocal = f.lower(inputs(em)).local;
      } catch (const Error&) {
        continue;
      }
      ++compared;
      EXPECT_LE(comm_bytes(local), comm_bytes(elocal)) << what << "\nAuto:\n"
                                                       << local << "Explicit:\n"
                                                       << elocal;
      if (::testing::Test::HasFailure()) return;
    }
  }
  // Mixed mesh (x Explicit, y Auto, spec §14): values, and the concrete layouts'
  // Explicit part is exactly the type's (y may only add to it).
  {
    Mesh mm = case_mesh({2, 4}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
    for (const auto& combo : rec.specs) {
      bool ok = true;
      for (const auto& p : combo) ok = ok && p.unreduced().empty();
      if (!ok) continue;
      std::string what = rec.name + " on mixed (x Explicit 2, y Auto 4) with";
      for (const auto& p : combo) what += " " + p.repr();
      MeshScope scope(mm);
      std::vector<Array> in, got;
      try {
        for (size_t i = 0; i < rec.inputs.size(); ++i)
          in.push_back(make(rec.inputs[i], static_cast<int>(i),
                            NamedSharding(mm, i < combo.size() ? combo[i] : P())));
        got = jit([&](const std::vector<Array>& a) { return rec.fn(a); })(in);
      } catch (const Error&) {
        continue;  // indivisible, a rule refusing on x, or an out_sharding naming y
      }
      ++ran;
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t k = 0; k < want.size(); ++k) {
        expect_close(want[k], host_value(got[k]), rec.rtol, what);
        const int r = got[k].ndim();
        auto typed = typeof(got[k]).sharding.spec().normalized(r).entries();
        auto laid = got[k].sharding().spec().normalized(r).entries();
        for (int d = 0; d < r; ++d) {
          Axes ex;
          for (const auto& a : laid[d].axes())
            if (a != "y") ex.push_back(a);
          EXPECT_EQ(ex, typed[d].axes()) << what << ": dim " << d << " of " << typeof(got[k]);
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  RecordProperty("layouts", ran);
  RecordProperty("compared", compared);
}

INSTANTIATE_TEST_SUITE_P(Table, AutoTable, ::testing::ValuesIn(all_records()), record_name);

}  // namespace
}  // namespace rules
