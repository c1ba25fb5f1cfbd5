// Records of the cumulative primitives: passing layouts and the E14 refusals.
#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {
std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(nullptr, "x")}};
}
}  // namespace

std::vector<Record> cumulative_records() {
  std::vector<Record> r;
  auto add = [&](std::vector<std::string> prims, std::string name, In in,
                 std::function<Array(const Array&)> f, double rtol = 1e-5) {
    r.push_back({std::move(prims),
                 std::move(name),
                 {in},
                 one([f](const std::vector<Array>& a) { return f(a[0]); }),
                 specs(),
                 rtol});
  };
  add({"cumsum"}, "cumsum_axis0", {{8, 4}}, [](const Array& x) { return cumsum(x, 0); });
  add({"cumsum"}, "cumsum_axis1_reverse", {{8, 4}},
      [](const Array& x) { return cumsum(x, 1, {.reverse = true}); });
  add({"cumsum"}, "cumsum_int", {{8, 4}, int32, Gen::Int},
      [](const Array& x) { return cumsum(x, -1); });
  add({"cumsum"}, "cumsum_bool", {{8, 4}, bool_, Gen::Bool},
      [](const Array& x) { return cumsum(x, 0); });
  add({"cumsum"}, "cumsum_flat", {{8, 4}}, [](const Array& x) { return cumsum(x); });
  add(
      {"cumsum"}, "cumsum_bf16", {{8, 4}, bfloat16, Gen::Small},
      [](const Array& x) { return cumsum(x, 1); }, 2e-2);
  add({"cumprod"}, "cumprod_axis1", {{8, 4}, float32, Gen::Small},
      [](const Array& x) { return cumprod(x, 1); });
  add({"cumprod"}, "cumprod_int8_reverse", {{8, 4}, int8, Gen::Index},
      [](const Array& x) { return cumprod(x, 0, {.reverse = true}); });
  add({"cummax"}, "cummax_axis0", {{8, 4}}, [](const Array& x) { return cummax(x, 0); });
  // One row sharded over a size-1 axis: associative_scan (cummax's jvp) concatenated a
  // replicated 1x1 slice with the sharded rest (found by the fuzzer; mesh (1) runs it;
  // the primal scan: AssociativeScan.OneRowShardedOverASizeOneAxis).
  add({"cummax"}, "cummax_one_row_reverse", {{1, 6}},
      [](const Array& x) { return cummax(x, 1, {.reverse = true}); });
  // Reduced operands: the jvp's constants must carry the reduced set into its selects
  // (cumlogsumexp's zero from full_like dropped it; found by the fuzzer).
  add({"cumlogsumexp"}, "cumlogsumexp_reduced", {{8, 4}},
      [](const Array& x) { return cumlogsumexp(reshard(x, P(Reduced{{"x"}})), 1); });
  add({"cummax"}, "cummax_reduced", {{8, 4}},
      [](const Array& x) { return cummax(reshard(x, P(Reduced{{"x"}})), 1); });

  add({"cummax"}, "cummax_f16_reverse", {{8, 4}, float16},
      [](const Array& x) { return cummax(x, 1, {.reverse = true}); });
  add({"cummin"}, "cummin_axis1", {{8, 4}, int32, Gen::Int},
      [](const Array& x) { return cummin(x, 1); });
  add({"cumlogsumexp"}, "cumlogsumexp_axis1", {{8, 4}},
      [](const Array& x) { return cumlogsumexp(x, 1); });
  add({"cumlogsumexp"}, "cumlogsumexp_axis0_reverse", {{8, 4}},
      [](const Array& x) { return cumlogsumexp(x, 0, {.reverse = true}); });
  // Autodiff coverage: structural ties (a second copy of x meets the running
  // extremum of the first) and float cumprod/cummin both ways.
  add({"cummax"}, "cummax_tied_copies", {{4, 4}}, [](const Array& x) {
    return cummax(concatenate({x, x}, 0), 0);
  });
  add({"cummin"}, "cummin_tied_copies_reverse", {{8, 2}}, [](const Array& x) {
    return cummin(concatenate({x, x}, 1), 1, {.reverse = true});
  });
  add({"cummin"}, "cummin_float_axis0", {{8, 4}}, [](const Array& x) { return cummin(x, 0); });
  add({"cumprod"}, "cumprod_axis0_reverse", {{8, 4}, float32, Gen::Small},
      [](const Array& x) { return cumprod(x, 0, {.reverse = true}); });
  add({"cumsum"}, "cumsum_of_square", {{8, 4}}, [](const Array& x) { return cumsum(x * x, 1); });
  return r;
}

static const RecordSet kSet(cumulative_records);

}  // namespace rules
