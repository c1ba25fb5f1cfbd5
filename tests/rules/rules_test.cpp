// The table driver: every record, on every mesh, with every spec combination.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <set>

#include "rules/processes.h"
#include "rules/record.h"
#include "tsr/backends/kernel.h"
#include "tsr/core/primitive.h"

using namespace tsr;

namespace rules {

static std::vector<std::vector<Record> (*)()>& families() {
  static std::vector<std::vector<Record> (*)()> f;
  return f;
}

RecordSet::RecordSet(std::vector<Record> (*f)()) { families().push_back(f); }

std::vector<Record> all_records() {
  std::vector<Record> r;
  for (auto f : families()) {
    auto v = f();
    r.insert(r.end(), v.begin(), v.end());
  }
  return r;
}

const std::vector<std::pair<std::string, std::string>>& replicated_only() {
  static const std::vector<std::pair<std::string, std::string>> v = {};
  return v;
}

std::vector<double> values(const In& in, int salt) {
  int64_t n = numel(in.shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = (i * 7 + salt * 13 + 3) % 17;
    switch (in.gen) {
      case Gen::Any:
        v[i] = (k - 8) * 0.25;
        break;
      case Gen::Pos:
        v[i] = 0.25 + k * 0.2;
        break;
      case Gen::Small:
        v[i] = (k - 8) * 0.05;
        break;
      case Gen::Int:
        v[i] = static_cast<double>(k - 8);
        break;
      case Gen::Bool:
        v[i] = k % 3 == 0 ? 1 : 0;
        break;
      case Gen::Index:
        v[i] = static_cast<double>(k % 3);
        break;
    }
  }
  return v;
}

Array make(const In& in, int salt, const Placement& where) {
  std::vector<double> v = values(in, salt);
  Array a = tsr::array(v, in.shape, where);
  return in.dtype == float64 ? a : a.astype(in.dtype);
}

Array make_grad(const In& in, int salt, const Placement& where) {
  std::vector<double> v = values(in, salt);
  bool fl = is_floating(in.dtype);
  if (fl)
    for (size_t i = 0; i < v.size(); ++i)
      v[i] +=
          0.02 * static_cast<double>((i * 37 + static_cast<size_t>(salt) * 11) % 97) / 97.0 + 0.05;
  Array a = tsr::array(v, in.shape, where);
  DType d = in.dtype == float32 ? float64 : in.dtype;
  return d == float64 ? a : a.astype(d);
}

std::string record_name(const ::testing::TestParamInfo<Record>& info) {
  std::string s = info.param.name;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

const std::vector<MeshCase>& meshes() {
  static const std::vector<MeshCase> m = {
      {"(1)", {1}, {"x"}}, {"(2)", {2}, {"x"}}, {"(8)", {8}, {"x"}}, {"(2,4)", {2, 4}, {"x", "y"}}};
  return m;
}

int for_each_layout(
    const Record& rec, const MakeInput& make_input,
    const std::function<bool(const std::vector<Array>&, const std::string&)>& body) {
  int ran = 0;
  for (const auto& m : meshes()) {
    Mesh mesh = case_mesh(m.sizes, m.names);
    MeshScope scope(mesh);
    for (const auto& combo : rec.specs) {
      bool ok = true;
      for (const auto& p : combo) ok = ok && mesh_has(m, p);
      if (!ok) continue;
      std::vector<Array> in;
      try {
        for (size_t i = 0; i < rec.inputs.size(); ++i)
          in.push_back(make_input(rec.inputs[i], static_cast<int>(i),
                                  i < combo.size() ? Placement(combo[i]) : Placement(P())));
      } catch (const ValueError& e) {
        // This mesh does not divide the shape (a type's E23 or a shard shape's E22).
        if (std::string(e.what()).find("evenly divide") == std::string::npos) throw;
        continue;
      }
      std::string what = rec.name + " on " + m.label + " with";
      for (const auto& p : combo) what += " " + p.repr();
      ++ran;
      if (!body(in, what)) return ran;
    }
  }
  return ran;
}

bool mesh_has(const MeshCase& m, const PartitionSpec& p) {
  for (const auto& a : p.partition_axes())
    if (std::find(m.names.begin(), m.names.end(), a) == m.names.end()) return false;
  for (const auto& a : p.unreduced())
    if (std::find(m.names.begin(), m.names.end(), a) == m.names.end()) return false;
  return true;
}

namespace {

void expect_close(const std::vector<double>& want, const std::vector<double>& got, double rtol,
                  const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
      continue;
    }
    double tol = rtol * std::max(1.0, std::fabs(want[i]));
    if (std::isinf(want[i])) {
      EXPECT_EQ(want[i], got[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(want[i], got[i], tol) << what << " at " << i;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

// Each shard's data equals the oracle at the shard's index: the layout matches
// the type (the rule's prediction is what the partitioner produced).
void expect_layout(const Array& out, const std::vector<double>& want, double rtol,
                   const std::string& what) {
  ASSERT_EQ(out.sharding().spec().normalized(out.ndim()).entries(),
            typeof(out).sharding.spec().normalized(out.ndim()).entries())
      << what << ": concrete layout differs from the type " << typeof(out);
  if (!typeof(out).sharding.spec().unreduced().empty()) return;
  const Shape& shape = out.shape();
  for (const auto& sh : out.addressable_shards()) {
    std::vector<double> got = sh.data->to_vector<double>();
    std::vector<double> exp;
    int r = static_cast<int>(shape.size());
    Shape lo(r), hi(r);
    for (int d = 0; d < r; ++d) {
      lo[d] = sh.index[d].full ? 0 : sh.index[d].start;
      hi[d] = sh.index[d].full ? shape[d] : sh.index[d].stop;
    }
    int64_t n = 1;
    for (int d = 0; d < r; ++d) n *= hi[d] - lo[d];
    Shape c = lo;
    for (int64_t k = 0; k < n; ++k) {
      int64_t flat = 0;
      for (int d = 0; d < r; ++d) flat = flat * shape[d] + c[d];
      exp.push_back(want[static_cast<size_t>(flat)]);
      for (int d = r - 1; d >= 0; --d) {
        if (++c[d] < hi[d]) break;
        c[d] = lo[d];
      }
    }
    expect_close(exp, got, rtol, what + " shard on " + sh.device.str());
    if (::testing::Test::HasFailure()) return;
  }
}

class Rules : public ::testing::TestWithParam<Record> {};

// Eager refused `fn` with `msg`: jit must refuse it with the same words, also when
// the refused value is dead (the check is in the rule, not after DCE).
void expect_jit_refuses(const Record& rec, const std::vector<Array>& in, const std::string& msg,
                        const std::string& what) {
  auto check = [&](auto&& f, const char* how) {
    try {
      (void)f(in);
      ADD_FAILURE() << what << ": eager refused (" << msg << ") but jit accepted" << how;
    } catch (const Error& j) {
      EXPECT_EQ(msg, std::string(j.what())) << what << how;
    }
  };
  check(jit([&](const std::vector<Array>& a) { return rec.fn(a); }), "");
  check(jit([&](const std::vector<Array>& a) {
          (void)rec.fn(a);
          return a;
        }),
        " with the value unused");
}

// A record every rule must refuse: eager and jit alike, on every mesh.
void run_refusals(const Record& rec) {
  int ran = for_each_layout(rec, make, [&](const std::vector<Array>& in, const std::string& what) {
    try {
      rec.fn(in);
      ADD_FAILURE() << what << ": expected the rule to refuse";
    } catch (const Error& e) {
      expect_jit_refuses(rec, in, e.what(), what);
    }
    return true;
  });
  EXPECT_GT(ran, 0) << rec.name << ": no mesh/spec combination ran";
}

TEST_P(Rules, ShardedMatchesOracleAndJitMatchesEager) {
  const Record& rec = GetParam();
  if (rec.refuses) return run_refusals(rec);
  // Oracle: unsharded, on one device (a 1x1 mesh so out_sharding specs resolve).
  std::vector<Array> base;
  // This process's first device: under mpirun every process computes the oracle itself.
  Mesh one_device = local_mesh({1, 1}, {"x", "y"});
  std::optional<MeshScope> oracle_scope(std::in_place, one_device);
  for (size_t i = 0; i < rec.inputs.size(); ++i)
    base.push_back(make(rec.inputs[i], static_cast<int>(i), local_devices()[0]));
  std::vector<Array> oracle = rec.oracle ? rec.oracle(base) : rec.fn(base);
  std::vector<std::vector<double>> want;
  for (const auto& o : oracle) want.push_back(o.to_vector<double>());
  oracle_scope.reset();
  int ran = for_each_layout(rec, make, [&](const std::vector<Array>& in, const std::string& what) {
    auto jitted = jit([&](const std::vector<Array>& a) { return rec.fn(a); });
    std::vector<Array> eager;
    try {
      eager = rec.fn(in);
    } catch (const Error& e) {
      // The rule refuses this layout (a sharding rule, or divisibility): jit must
      // refuse it with the same words.
      const bool divides = dynamic_cast<const ValueError*>(&e) &&
                           std::string(e.what()).find("evenly divide") != std::string::npos;
      if (!dynamic_cast<const ShardingTypeError*>(&e) && !divides) throw;
      expect_jit_refuses(rec, in, e.what(), what);
      return true;
    }
    EXPECT_EQ(eager.size(), want.size()) << what;
    std::vector<Array> traced = jitted(in);
    EXPECT_EQ(traced.size(), want.size()) << what;
    if (eager.size() != want.size() || traced.size() != want.size()) return false;
    for (size_t k = 0; k < want.size(); ++k) {
      expect_close(want[k], host_value(eager[k]), rec.rtol, what + " (eager)");
      expect_layout(eager[k], want[k], rec.rtol, what + " (eager)");
      EXPECT_EQ(typeof(traced[k]).str(), typeof(eager[k]).str()) << what << " jit vs eager";
      expect_close(want[k], host_value(traced[k]), rec.rtol, what + " (jit)");
      EXPECT_EQ(typeof(oracle[k]).shape, typeof(eager[k]).shape) << what;
      EXPECT_EQ(typeof(oracle[k]).dtype, typeof(eager[k]).dtype) << what;
      if (::testing::Test::HasFailure()) return false;
    }
    return true;
  });
  EXPECT_GT(ran, 0) << rec.name << ": no mesh/spec combination ran";
}

INSTANTIATE_TEST_SUITE_P(Table, Rules, ::testing::ValuesIn(all_records()), record_name);

// Every registered primitive has a sharding rule exercised by a table record (or
// is listed as replicated-only with a reason) and a CPU kernel.
TEST(RulesCoverage, EveryPrimitiveHasARuleRecordAndAKernel) {
  std::set<std::string> covered;
  for (const auto& r : all_records()) covered.insert(r.prims.begin(), r.prims.end());
  std::set<std::string> replicated;
  for (const auto& [p, why] : replicated_only()) {
    EXPECT_FALSE(why.empty()) << p << " is listed replicated-only without a reason";
    replicated.insert(p);
  }
  for (const auto& p : detail::registered_primitives()) {
    EXPECT_TRUE(covered.count(p) || replicated.count(p))
        << "primitive '" << p << "' has no table record and is not listed replicated-only";
    // Higher-order primitives are inlined by the lowering; custom_lin is never run
    // (forward mode through custom_vjp is refused); collectives lower to comm steps.
    static const std::set<std::string> kernel_free = {
        "jit", "custom_jvp_call", "custom_vjp_call", "checkpoint", "custom_lin", "shard_map",
        "psum", "pmax", "pmin", "pvary", "axis_index",
        // Collectives lower to comm steps (Group calls), not kernels.
        "all_gather", "all_gather_invariant", "reduce_scatter", "ppermute", "all_to_all",
        "pbroadcast",
        // pcast's casts alias the buffer (as pvary); unreduced_psum is psum's all-reduce.
        "preduced", "vary_unreduced_cast", "reduced_vary_cast", "unreduced_psum",
        // Control flow runs its bodies' kernels from loop and branch steps.
        "cond", "while", "scan",
        // A layout constraint lowers to a reshard step.
        "sharding_constraint"};
    if (!kernel_free.count(p)) {
      EXPECT_TRUE(detail::has_kernel(p.c_str())) << "no cpu kernel for " << p;
    }
  }
  EXPECT_GE(detail::registered_primitives().size(), 60u);
}

}  // namespace
}  // namespace rules
