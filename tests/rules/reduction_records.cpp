#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}, {P("y", "x")}};
}

using F = std::function<Array(const Array&)>;
Record red(std::vector<std::string> prims, std::string name, F f, Gen gen = Gen::Any,
           DType dt = float32) {
  return {std::move(prims),
          std::move(name),
          {{{8, 4}, dt, gen}},
          one([f](const std::vector<Array>& a) { return f(a[0]); }),
          specs(),
          1e-5};
}

}  // namespace

std::vector<Record> reduction_records() {
  std::vector<Record> v = {
      red({"reduce_sum"}, "sum_all", [](const Array& x) { return sum(x); }),
      red({"reduce_sum"}, "sum_axis0", [](const Array& x) { return sum(x, 0); }),
      red({"reduce_sum"}, "sum_axis1_keepdims",
          [](const Array& x) { return sum(x, 1, {.keepdims = true}); }),
      red(
          {"reduce_sum"}, "sum_int",
          [](const Array& x) {
            return sum(x, {0, 1});
          },
          Gen::Int, int32),
      red(
          {"reduce_prod"}, "prod_axis0", [](const Array& x) { return prod(x, 0); }, Gen::Small),
      red({"reduce_max"}, "max_axis1", [](const Array& x) { return max(x, 1); }),
      red({"reduce_max"}, "max_all", [](const Array& x) { return max(x); }),
      red({"reduce_min"}, "min_axis0", [](const Array& x) { return min(x, 0); }),
      red(
          {"reduce_and"}, "all_axis0", [](const Array& x) { return all(x, 0); }, Gen::Bool, bool_),
      red(
          {"reduce_or"}, "any_axis1", [](const Array& x) { return any(x, 1); }, Gen::Bool, bool_),
      red({"reduce_sum"}, "mean_axis0", [](const Array& x) { return mean(x, 0); }),
      red({"reduce_sum"}, "var_all", [](const Array& x) { return var(x); }),
      red({"argmax"}, "argmax_axis0", [](const Array& x) { return argmax(x, 0); }),
      red({"argmin"}, "argmin_axis1", [](const Array& x) { return argmin(x, 1); }),
      red({"argmax"}, "argmax_flat", [](const Array& x) { return argmax(x); }),
      red({"reduce_max"}, "logsumexp_axis1", [](const Array& x) { return logsumexp(x, 1); }),
      // Reductions over no axes are the identity; their jvp must transpose (fuzzer: vjp
      // of max(x, axis=[]) and of logsumexp of a rank-0 value refused).
      red({"reduce_max"}, "max_no_axes",
          [](const Array& x) { return max(x, std::vector<int>{}) * x; }),
      red({"reduce_min"}, "min_rank0", [](const Array& x) { return min(sum(x)) * x; }),
      red({"reduce_prod"}, "prod_no_axes",
          [](const Array& x) { return prod(x, std::vector<int>{}) * x; }),
      // An empty operand whose reduced dims merge (0 with 4): the jvp must not reshape
      // them (reshape's rule refuses merging a size-0 dim; found by the fuzzer).
      red({"reduce_prod"}, "prod_of_empty",
          [](const Array& x) {
            Array e = reshape(x, {8, 4, 1})[{all, all, Slice{0, 0}}];
            return prod(e, std::vector<int>{1, 2}) * sum(x, 1);
          }),
      red({"reduce_max"}, "logsumexp_rank0",
          [](const Array& x) { return logsumexp(sum(x) * 0.25) * x; }),
      red({"reduce_sum"}, "softmax", [](const Array& x) { return softmax(x); }),
      red({"reduce_sum"}, "log_softmax_axis0", [](const Array& x) { return log_softmax(x, 0); }),
  };
  Record b = red(
      {"reduce_sum"}, "sum_bf16", [](const Array& x) { return sum(x, 0); }, Gen::Small, bfloat16);
  b.rtol = 4e-3;  // f32 partial sums differ per layout; at most one bf16 ulp after rounding
  v.push_back(b);
  return v;
}

static const RecordSet kSet(reduction_records);

}  // namespace rules
