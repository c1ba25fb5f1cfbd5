// Records of sort, top_k and searchsorted: passing layouts, the E15/E16 refusals,
// unequal operand shardings, and a sharded searchsorted table (gathered).
#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {
std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(nullptr, "x")}};
}
// Ascending with repeats (0, 0, 1, 1, ...), sharded like x.
Array sorted_like(const Array& x) {
  return add(multiply(x, 0.0), floor(divide(broadcasted_iota(float32, x.shape(), 0), 2.0)));
}
}  // namespace

std::vector<Record> sort_records() {
  std::vector<Record> r;
  auto add1 = [&](std::vector<std::string> prims, std::string name, In in,
                  std::function<Array(const Array&)> f) {
    r.push_back({std::move(prims),
                 std::move(name),
                 {in},
                 one([f](const std::vector<Array>& a) { return f(a[0]); }),
                 specs()});
  };
  add1({"sort"}, "sort_last", {{8, 4}}, [](const Array& x) { return sort(x); });
  add1({"sort"}, "sort_axis0", {{8, 4}}, [](const Array& x) { return sort(x, 0); });
  add1({"sort", "rev"}, "sort_descending_int", {{8, 4}, int32, Gen::Int},
       [](const Array& x) { return sort(x, 0, true, true); });
  add1({"sort"}, "sort_flat", {{8, 4}}, [](const Array& x) { return sort(x, std::nullopt); });
  add1({"sort"}, "sort_nan", {{8, 4}}, [](const Array& x) { return sort(log(x), 1); });
  r.back().grad = Record::Grad::NoFD;
  r.back().grad_why =
      "log of the negative inputs is NaN, where finite differences are NaN while the jvp "
      "(t / x, as JAX's) is finite";
  add1({"sort"}, "sort_tied_copies", {{8, 4}}, [](const Array& x) {
    return sort(concatenate({x, x}, 1), 1);
  });
  // Size-0 operands: the jvp's gather along the sorted dim must not ask for a slice
  // wider than a size-0 dim (found by the fuzzer).
  add1({"sort"}, "sort_empty_rows", {{0, 4}}, [](const Array& x) { return sort(x, 1); });
  add1({"top_k"}, "top_k_empty_rows", {{0, 8}}, [](const Array& x) { return top_k(x, 3).first; });
  // A Reduced operand: the jvp's iota must carry the reduced set too (found by the fuzzer).
  add1({"sort"}, "sort_reduced", {{8, 4}},
       [](const Array& x) { return sort(reshard(x, P(Reduced{{"x"}})), 1); });
  add1({"sort", "iota"}, "argsort_ties", {{8, 4}, int32, Gen::Index},
       [](const Array& x) { return argsort(x, 0); });
  add1({"sort", "iota"}, "argsort_descending", {{8, 4}, int32, Gen::Index},
       [](const Array& x) { return argsort(x, 1, true, true); });
  add1({"sort", "iota"}, "argsort_flat", {{8, 4}},
       [](const Array& x) { return argsort(x, std::nullopt); });
  r.push_back({{"sort"},
               "sort_multi_operand",
               {{{8, 4}, int32, Gen::Index}, {{8, 4}}},
               [](const std::vector<Array>& a) {
                 return sort({a[0], a[1]}, 1);
               },
               {{P(), P()},
                {P("x"), P("x")},
                {P("x"), P()},
                {P("x"), P("y")},
                {P(nullptr, "y"), P(nullptr, "y")}}});
  r.push_back({{"sort"},
               "sort_two_keys",
               {{{8, 4}, int32, Gen::Index}, {{8, 4}, int32, Gen::Index}, {{8, 4}}},
               [](const std::vector<Array>& a) {
                 return sort({a[0], a[1], a[2]}, 0, true, 2);
               },
               {{P(), P(), P()},
                {P(nullptr, "y"), P(nullptr, "y"), P(nullptr, "y")},
                {P("x"), P("x"), P("x")}}});
  r.push_back(
      {{"sort"},
       "sort_float_key_and_value",
       {{{8, 4}}, {{8, 4}}},
       [](const std::vector<Array>& a) {
         return sort({a[0], a[1]}, 0);
       },
       {{P(), P()}, {P(nullptr, "y"), P(nullptr, "y")}, {P(nullptr, "x"), P(nullptr, "x")}}});
  r.push_back({{"top_k"},
               "top_k_batched",
               {{{2, 4, 8}}},
               [](const std::vector<Array>& a) {
                 auto [v, i] = top_k(a[0], 5);
                 return std::vector<Array>{v, i};
               },
               {{P()}, {P("x")}, {P(nullptr, "y")}, {P("x", "y")}}});
  r.push_back({{"top_k"},
               "top_k",
               {{{8, 4}, int32, Gen::Index}},
               [](const std::vector<Array>& a) {
                 auto [v, i] = top_k(a[0], 2);
                 return std::vector<Array>{v, i};
               },
               specs()});
  r.push_back({{"top_k"},
               "top_k_float",
               {{{4, 8}}},
               [](const std::vector<Array>& a) {
                 auto [v, i] = top_k(a[0], 3);
                 return std::vector<Array>{v, i};
               },
               specs()});
  r.push_back(
      {{"searchsorted"},
       "searchsorted_left",
       {{{8}}, {{8, 4}}},
       one([](const std::vector<Array>& a) { return searchsorted(sorted_like(a[0]), a[1]); }),
       {{P(), P()},
        {P("x"), P()},
        {P(), P("x")},
        {P("x"), P("x", "y")},
        {P("y"), P(nullptr, "x")}}});
  r.push_back({{"searchsorted"},
               "searchsorted_right",
               {{{8}}, {{8, 4}}},
               one([](const std::vector<Array>& a) {
                 return searchsorted(sorted_like(a[0]), a[1], "right");
               }),
               {{P(), P()}, {P("x"), P("x")}, {P(), P(nullptr, "y")}}});
  return r;
}

static const RecordSet kSet(sort_records);

}  // namespace rules
