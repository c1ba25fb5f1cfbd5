// Every record under vmap (issue 11): a batch of 8 examples with the batch dimension
// at 0, at the end, and with the first operand unbatched, on meshes (1) and (8) with
// the batch sharded over the mesh's "v" axis (records keep their "x" and "y", of size
// 1), eagerly and under jit: equal to a loop over the examples on one device. The
// coverage test checks that every primitive's batching rule ran.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "rules/processes.h"
#include "rules/record.h"
#include "support/check_grads.h"
#include "tsr/core/primitive.h"
#include "tsr/transforms/ad.h"
#include "tsr/vmap.h"

using namespace tsr;

namespace rules {
namespace {

constexpr int kBatch = 8;

class Vmapped : public ::testing::TestWithParam<Record> {};

// Example b's inputs, on one device.
std::vector<Array> example(const Record& rec, int b) {
  std::vector<Array> in;
  for (size_t i = 0; i < rec.inputs.size(); ++i)
    in.push_back(make(rec.inputs[i], static_cast<int>(i) + 17 * b, local_devices()[0]));
  return in;
}

bool close(const Array& want, const Array& got, double tol, std::string& why) {
  if (want.shape() != got.shape() || want.dtype() != got.dtype()) {
    why = "type " + got.type().str() + ", expected " + want.type().str();
    return false;
  }
  auto a = host_value(want), b = host_value(got);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))) continue;
    if (!(std::fabs(a[i] - b[i]) <= tol * (1 + std::fabs(a[i])))) {
      why = "element " + std::to_string(i) + ": loop " + std::to_string(a[i]) + ", vmap " +
            std::to_string(b[i]);
      return false;
    }
  }
  return true;
}

// How a variant lays the batch out: where each input carries it (-1: unbatched).
struct Variant {
  const char* name;
  int first_axis;  // input 0: 0, -1 (the end) or kUnbatched
  int rest_axis;   // the other inputs
};
constexpr int kUnbatched = 1000;

TEST_P(Vmapped, EqualsALoopOverExamples) {
  const Record& rec = GetParam();
  if (rec.refuses || rec.inputs.empty()) return;
  auto fn = rec.oracle ? rec.oracle : rec.fn;
  std::vector<std::vector<Array>> ex;
  for (int b = 0; b < kBatch; ++b) ex.push_back(example(rec, b));
  const Variant variants[] = {{"batch at 0", 0, 0},
                              {"batch at the end", -1, -1},
                              {"first operand unbatched", kUnbatched, 0}};
  for (const Variant& v : variants) {
    if (v.first_axis == kUnbatched && rec.inputs.size() < 2) continue;
    // The oracle: the record on each example, one device, stacked.
    std::vector<Array> want;
    try {
      Mesh one = local_mesh({1, 1}, {"x", "y"});
      MeshScope scope(one);
      std::vector<std::vector<Array>> outs;
      for (int b = 0; b < kBatch; ++b) {
        std::vector<Array> in = ex[b];
        if (v.first_axis == kUnbatched) in[0] = ex[0][0];
        outs.push_back(fn(in));
      }
      for (size_t j = 0; j < outs[0].size(); ++j) {
        std::vector<Array> col;
        for (auto& o : outs) col.push_back(o[j]);
        want.push_back(stack(col, 0));
      }
    } catch (const Error&) {
      continue;  // the record's own inputs are refused one example at a time
    }
    for (int n : {1, 8}) {
      Mesh mesh = case_mesh({n, 1, 1}, {"v", "x", "y"});
      MeshScope scope(mesh);
      try {  // the record's rule refuses its inputs replicated: the Rules test covers it
        std::vector<Array> one;
        for (const auto& e : ex[0]) one.push_back(device_put(e, P()));
        (void)rec.fn(one);
      } catch (const Error&) {
        break;
      }
      std::vector<Array> in;
      std::vector<VmapAxis> axes;
      for (size_t i = 0; i < rec.inputs.size(); ++i) {
        int ax = i == 0 ? v.first_axis : v.rest_axis;
        if (ax == kUnbatched) {
          in.push_back(device_put(ex[0][i], P()));
          axes.push_back(none);
          continue;
        }
        std::vector<Array> col;
        for (int b = 0; b < kBatch; ++b) col.push_back(ex[b][i]);
        Array s = stack(col, 0);
        int r = s.ndim();
        std::vector<PartitionEntry> e(static_cast<size_t>(r));
        int at = ax < 0 ? r - 1 : 0;
        e[static_cast<size_t>(at)] = "v";
        in.push_back(device_put(at == 0 ? s : moveaxis(s, 0, at), PartitionSpec(e)));
        axes.push_back(ax);
      }
      std::vector<tree::Prefix<VmapAxis>> per;
      for (auto a : axes) per.push_back(a);
      auto body = [&](const std::vector<Array>& a) { return rec.fn(a); };
      auto vf = vmap(body, {.in_axes = {tree::Prefix<VmapAxis>(per)}});
      std::string what = rec.name + ", " + v.name + ", mesh (" + std::to_string(n) + ")";
      for (bool jitted : {false, true}) {
        std::vector<Array> got;
        try {
          got = jitted ? jit(vf)(in) : vf(in);
        } catch (const Error& err) {
          // A body that shards over every mesh axis names the vmapped one: refused (spec
          // §12.16), as is a shard_map body reducing over it (manual-spmd §6.3).
          std::string msg = err.what();
          if (msg.find("which the vmapped dimension is sharded over") != std::string::npos ||
              msg.find("vmapped away explicit mesh axis") != std::string::npos)
            break;
          ADD_FAILURE() << what << (jitted ? " under jit" : "") << ": " << err.what();
          return;
        }
        ASSERT_EQ(got.size(), want.size()) << what;
        for (size_t j = 0; j < got.size(); ++j) {
          std::string why;
          EXPECT_TRUE(close(want[j], got[j], 1e-6 + rec.rtol, why))
              << what << (jitted ? " under jit" : "") << ", output " << j << ": " << why;
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, Vmapped, ::testing::ValuesIn(all_records()), record_name);

// Derivatives and vmap in both orders, on one device in float64: check_grads of the
// vmapped record (jvp against finite differences, vjp against jvp), and vmap of the
// record's vjp against the per-example vjps.
class VmappedGrads : public ::testing::TestWithParam<Record> {};

TEST_P(VmappedGrads, GradOfVmapAndVmapOfGrad) {
  const Record& rec = GetParam();
  // Reverse mode of a forward-only record (while_loop) is refused; its jvp is checked
  // batched by the Grads test's forward mode and vmapped by the Vmapped test.
  if (rec.refuses || rec.inputs.empty() || rec.grad == Record::Grad::Skip ||
      rec.grad == Record::Grad::FwdOnly)
    return;
  for (const auto& in : rec.inputs)
    if (in.dtype == float16 || in.dtype == bfloat16) return;  // Grads covers their tolerances
  constexpr int kB = 3;
  Mesh one = local_mesh({1, 1}, {"x", "y"});
  MeshScope scope(one);
  detail::FlatFn fn = rec.oracle ? rec.oracle : rec.fn;
  std::vector<std::vector<Array>> ex(kB);
  std::vector<Array> batched;
  for (size_t i = 0; i < rec.inputs.size(); ++i) {
    std::vector<Array> col;
    for (int b = 0; b < kB; ++b) {
      ex[b].push_back(make_grad(rec.inputs[i], static_cast<int>(i) + 17 * b, local_devices()[0]));
      col.push_back(ex[b].back());
    }
    batched.push_back(stack(col, 0));
  }
  try {
    (void)fn(ex[0]);
  } catch (const Error&) {
    return;  // refused one example at a time: the Rules test covers it
  }
  detail::FlatFn vf = [fn](const std::vector<Array>& a) {
    return vmap([&](const std::vector<Array>& v) { return fn(v); })(a);
  };
  gradcheck::GradCheck gc;
  gc.order = 1;
  gc.fd = rec.grad == Record::Grad::Check;
  gc.fwd = rec.grad != Record::Grad::RevOnly;
  gradcheck::check_grads(vf, batched, gc, rec.name + " under vmap");
  if (::testing::Test::HasFailure()) return;
  // vmap of the vjp with an all-ones output cotangent (zeros for integer outputs).
  detail::FlatFn per = [fn](const std::vector<Array>& a) {
    auto [outs, lin] = detail::vjp_flat(fn, a);
    std::vector<Array> cts;
    for (const auto& o : outs) {
      // Of the output's cotangent type (unreduced and reduced swapped, spec §9).
      Array c = full(o.shape(), is_floating(o.dtype()) ? 1.0 : 0.0, o.dtype());
      ArrayType t = detail::ct_type(o.type());
      cts.push_back(t.sharding.mesh().empty() ? c : reshard(c, t.sharding));
    }
    return (*lin)(cts);
  };
  std::vector<Array> got = vmap([&](const std::vector<Array>& v) { return per(v); })(batched);
  std::vector<std::vector<Array>> loop;
  for (int b = 0; b < kB; ++b) loop.push_back(per(ex[b]));
  for (size_t j = 0; j < got.size(); ++j) {
    std::vector<Array> col;
    for (int b = 0; b < kB; ++b) col.push_back(loop[b][j]);
    std::string why;
    EXPECT_TRUE(close(stack(col, 0), got[j], 1e-9 + rec.rtol, why))
        << rec.name << ": vmap of the vjp, cotangent " << j << ": " << why;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, VmappedGrads, ::testing::ValuesIn(all_records()), record_name);

// Primitives no batching rule can be asked for, with the reason.
const std::map<std::string, std::string>& unbatched() {
  static const std::map<std::string, std::string> m = {
      {"iota", "no operands: never batched"},
      {"full", "no operands: never batched"},
      {"axis_index",
       "no operands: batched only over a vmap axis_name (tests/unit/vmap_collectives_test.cpp)"},
      {"custom_lin", "only inside a linearized custom_vjp program, which cannot run forward"},
      {"shard_map", "vmap of shard_map arrives with issue 12 item 5"},
      {"sharding_constraint",
       "binds on Auto axes only (records run on Explicit meshes); "
       "tests/unit/auto_propagation_test.cpp vmaps it on an Auto mesh"},
  };
  return m;
}

TEST(BatchCoverage, EveryPrimitiveHasABatchingRule) {
  std::set<std::string> seen;
  {
    detail::RuleLog log;
    Mesh one = local_mesh({1, 1}, {"x", "y"});
    MeshScope scope(one);
    for (const auto& rec : all_records()) {
      if (rec.refuses || rec.inputs.empty()) continue;
      std::vector<std::vector<Array>> ex = {example(rec, 0), example(rec, 1)};
      std::vector<Array> in;
      for (size_t i = 0; i < rec.inputs.size(); ++i) in.push_back(stack({ex[0][i], ex[1][i]}, 0));
      try {
        (void)vmap([&](const std::vector<Array>& a) { return rec.fn(a); })(in);
      } catch (const Error&) {
        // The Vmapped test reports it.
      }
    }
    seen.insert(log.seen().begin(), log.seen().end());
  }
  for (const auto& p : detail::registered_primitives()) {
    if (unbatched().count(p)) continue;
    EXPECT_TRUE(seen.count("batch:" + p)) << "no record ran the batching rule of '" << p << "'";
  }
}

}  // namespace
}  // namespace rules
