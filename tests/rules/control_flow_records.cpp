// Records for cond, while and scan: on every driver mesh and layout the loop or branch
// runs on the devices with its carries laid out as typed, and gives the one-device
// values; the Grads test differentiates cond and scan (reverse mode through their
// transposes) and the while loop in forward mode only (as JAX).
#include "rules/record.h"
#include "tsr/control_flow.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::vector<PartitionSpec>> carry_specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}};
}

}  // namespace

std::vector<Record> control_flow_records() {
  std::vector<Record> r;
  // Both branches of a cond whose predicate is a reduction of the operand.
  r.push_back(Record{{"cond"},
                     "cond_on_a_reduction",
                     {{{8, 4}}},
                     one([](const std::vector<Array>& a) {
                       return cond(
                                  sum(a[0]) > 0.0, [](const Array& x) { return sin(x) * x; },
                                  [](const Array& x) { return x * 3.0; }, a[0]) +
                              cond(
                                  sum(a[0]) < 0.0, [](const Array& x) { return sin(x) * x; },
                                  [](const Array& x) { return x * 3.0; }, a[0]);
                     }),
                     carry_specs()});
  // A scan whose body mixes the carry with a slice; xs' dim 0 stays unsharded.
  r.push_back(Record{{"scan"},
                     "scan_carry_and_ys",
                     {{{8, 4}}, {{3, 8, 4}}},
                     [](const std::vector<Array>& a) {
                       auto [c, ys] = scan(
                           [](const Array& c, const Array& x) {
                             Array n = tanh(c + x) * 0.5;
                             return std::pair<Array, Array>(n, n * x);
                           },
                           a[0], a[1]);
                       return std::vector<Array>{c, ys};
                     },
                     {{P(), P()},
                      {P("x"), P(nullptr, "x")},
                      {P("x", "y"), P(nullptr, "x", "y")},
                      {P(nullptr, "y"), P(nullptr, nullptr, "y")}}});
  // A while loop with a data-dependent trip count (a counter carry).
  Record w{{"while"},
           "while_counted",
           {{{8, 4}}},
           one([](const std::vector<Array>& a) {
             using C = std::pair<Array, Array>;
             return while_loop([](const C& c) { return c.first < 3; },
                               [](const C& c) { return C(c.first + 1, sin(c.second) + c.second); },
                               C(full({}, 0.0, int32), a[0]))
                 .second;
           }),
           carry_specs()};
  w.grad = Record::Grad::FwdOnly;
  w.grad_why = "while_loop is forward-mode only (as JAX)";
  r.push_back(w);
  return r;
}

static const RecordSet kSet(control_flow_records);

}  // namespace rules
