// Records for pcast's casts and unreduced_psum (manual-spmd §3.5, §3.6): each body
// casts over the axes its block varies over and sums back, so the result does not
// depend on the layout; the driver compares values with one device on every mesh and
// spec, and the gradient check runs each cast's transpose (tsr::pcast's unit tests
// in tests/unit/issue23_errors_test.cpp check types and errors).
#include "rules/record.h"
#include "tsr/shard_map.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::string> varying(const Array& b) {
  std::vector<std::string> v;
  for (const auto& a : get_abstract_mesh().axis_names())
    if (typeof(b).vma.count(a)) v.push_back(a);
  return v;
}

std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}};
}

}  // namespace

std::vector<Record> pcast_records() {
  std::vector<Record> r;
  // varying -> unreduced, then unreduced_psum: the sum of the blocks' partial sums.
  r.push_back(Record{{"shard_map", "vary_unreduced_cast", "unreduced_psum"},
                     "pcast_unreduced_then_psum",
                     {{{16, 8}}},
                     one([](const std::vector<Array>& a) {
                       auto body = [](const Array& b) {
                         std::vector<std::string> ax = varying(b);
                         Array part = sum(b * b, std::vector<int>{1});  // [rows of the block]
                         Array s = sum(part);
                         return psum(pcast(s, ax, PcastTo::Unreduced), ax);
                       };
                       return shard_map(body, {.out_specs = P()})(a[0]);
                     }),
                     specs(),
                     1e-5});
  // invariant -> reduced -> varying (explicitly, and implicitly in a product).
  std::vector<std::vector<PartitionSpec>> two;
  for (const auto& s : specs()) two.push_back({P(), s[0]});
  r.push_back(Record{{"shard_map", "preduced", "reduced_vary_cast"},
                     "pcast_reduced_then_varying",
                     {{{}}, {{16, 8}}},
                     one([](const std::vector<Array>& a) {
                       auto body = [](const Array& w, const Array& b) {
                         std::vector<std::string> ax = varying(b);
                         Array q = pcast(pcast(w, ax, PcastTo::Reduced), ax, PcastTo::Varying);
                         Array imp = pcast(w * 0.5, ax, PcastTo::Reduced) * b;  // implicit cast
                         return psum(sum(q * b) + sum(imp * imp), ax);
                       };
                       return shard_map(body, {.out_specs = P()})(a[0], a[1]);
                     }),
                     two,
                     1e-5});
  return r;
}

static const RecordSet kSet(pcast_records);

}  // namespace rules
