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

// Every manual axis of the body (all of the mesh's), and how many devices hold each
// element of a block that varies over only some of them.
std::vector<std::string> all_axes() { return get_abstract_mesh().axis_names(); }

double copies(const Array& b) {
  double n = 1;
  for (const auto& a : all_axes())
    if (!typeof(b).vma.count(a)) n *= static_cast<double>(axis_size(a));
  return n;
}

// b varying over every axis (a pvary over those it is invariant over).
Array everywhere(const Array& b) {
  std::vector<std::string> add;
  for (const auto& a : all_axes())
    if (!typeof(b).vma.count(a)) add.push_back(a);
  return add.empty() ? b : pcast(b, add, PcastTo::Varying);
}

std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}};
}

}  // namespace

std::vector<Record> pcast_records() {
  std::vector<Record> r;
  // varying -> unreduced, then unreduced_psum: the sum of every device's partial sum
  // (a block held by several devices counted once).
  r.push_back(Record{{"shard_map", "vary_unreduced_cast", "unreduced_psum"},
                     "pcast_unreduced_then_psum",
                     {{{16, 8}}},
                     one([](const std::vector<Array>& a) {
                       auto body = [](const Array& b) {
                         Array v = everywhere(b);
                         Array u = pcast(sum(v * v), all_axes(), PcastTo::Unreduced);
                         return psum(u, all_axes()) / copies(b);
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
                         Array v = everywhere(b);
                         Array r = pcast(w, all_axes(), PcastTo::Reduced);
                         Array q = pcast(r, all_axes(), PcastTo::Varying);
                         Array imp = pcast(w * 0.5, all_axes(), PcastTo::Reduced) * v;
                         return psum(sum(q * v) + sum(imp * imp), all_axes()) / copies(b);
                       };
                       return shard_map(body, {.out_specs = P()})(a[0], a[1]);
                     }),
                     two,
                     1e-5});
  return r;
}

static const RecordSet kSet(pcast_records);

}  // namespace rules
