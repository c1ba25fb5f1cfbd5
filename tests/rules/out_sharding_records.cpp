// out_sharding variants of the primitives that take one, including unreduced
// results of each kind, and the refusals: the driver checks that jit refuses each
// exactly as eager does, also when the refused value is never used.
#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "x")}, {P(Axes{"x", "y"})}, {P("y", "x")}};
}

using F = std::function<Array(const Array&)>;
Record rec(std::vector<std::string> prims, std::string name, F f, Gen gen = Gen::Any,
           DType dt = float32) {
  return {std::move(prims),
          std::move(name),
          {{{8, 4}, dt, gen}},
          one([f](const std::vector<Array>& a) { return f(a[0]); }),
          specs(),
          1e-5};
}

Record refusal(std::vector<std::string> prims, std::string name, F f, DType dt = float32) {
  Record r = rec(std::move(prims), std::move(name), std::move(f), Gen::Any, dt);
  r.refuses = true;
  return r;
}

const Unreduced kMaxX{{"x"}, UnreducedKind::Max};
const Unreduced kMinX{{"x"}, UnreducedKind::Min};

}  // namespace

std::vector<Record> out_sharding_records() {
  return {
      rec({"reduce_sum"}, "sum_out_unreduced",
          [](const Array& x) {
            return sum(reshard(x, P("x")), 0, {.out_sharding = P(nullptr, Unreduced{{"x"}})});
          }),
      rec({"reduce_max"}, "max_out_unreduced_max",
          [](const Array& x) {
            return max(reshard(x, P("x")), 0, {.out_sharding = P(nullptr, kMaxX)});
          }),
      // The result laid out on a dim other than x's: the jvp compares x with the result
      // broadcast back, which must follow x's layout (found by the fuzzer).
      rec({"reduce_max"}, "max_out_sharding_elsewhere",
          [](const Array& x) { return max(x, 1, {.out_sharding = P("x")}); }),
      rec({"reduce_min"}, "min_out_unreduced_min",
          [](const Array& x) {
            return min(reshard(x, P("x")), 0, {.out_sharding = P(nullptr, kMinX)});
          }),
      rec({"reduce_sum"}, "sum_out_sharded",
          [](const Array& x) { return sum(x, 0, {.out_sharding = P("x")}); }),
      rec({"reduce_sum", "add"}, "sum_of_unreduced_plus_itself",
          [](const Array& x) {
            Array u = sum(reshard(x, P("x")), 0, {.out_sharding = P(nullptr, Unreduced{{"x"}})});
            return reshard(u + u, P());
          }),
      rec(
          {"convert_element_type"}, "convert_with_sharding",
          [](const Array& x) { return convert_element_type(x, int32, {.sharding = P("x")}); },
          Gen::Int),
      rec({"broadcast_in_dim"}, "broadcast_in_dim_out_sharding",
          [](const Array& x) {
            return broadcast_in_dim(x, {2, 8, 4}, {1, 2}, P(nullptr, nullptr, "x"));
          }),
      rec({"reshape"}, "reshape_out_sharding_split",
          [](const Array& x) {
            return reshape(x, {4, 8}, P(nullptr, "x"));
          }),
      rec({"dot_general"}, "dot_out_unreduced_over_contracting",
          [](const Array& x) {
            return matmul(reshard(x, P(nullptr, "x")), reshard(transpose(x), P("x")),
                          {.out_sharding = P(nullptr, nullptr, Unreduced{{"x"}})});
          }),
      // Transposes with an unreduced operand the dot cannot take beside the other (found
      // by the fuzzer): the cotangent of a Reduced result against an operand sharded over
      // its axis, and an unreduced primal against a cotangent sharded over it.
      rec({"dot_general"}, "dot_out_reduced_operand_sharded_on_it",
          [](const Array& x) {
            return matmul(reshard(x, P("x")), transpose(x),
                          {.out_sharding = P(nullptr, nullptr, Reduced{{"x"}})});
          }),
      rec({"dot_general"}, "dot_of_unreduced_out_sharded",
          [](const Array& x) {
            Array u = matmul(reshard(x, P(nullptr, "x")), reshard(transpose(x), P("x")),
                             {.out_sharding = P(nullptr, nullptr, Unreduced{{"x"}})});
            return matmul(u, x, {.out_sharding = P("x")});
          }),
      refusal({"reduce_max"}, "max_with_sum_kind_unreduced",
              [](const Array& x) { return max(x, 0, {.out_sharding = P(Unreduced{{"x"}})}); }),
      refusal({"reduce_min"}, "min_with_max_kind_unreduced",
              [](const Array& x) { return min(x, 0, {.out_sharding = P(kMaxX)}); }),
      refusal({"reduce_prod"}, "prod_with_unreduced",
              [](const Array& x) { return prod(x, 0, {.out_sharding = P(Unreduced{{"x"}})}); }),
      refusal({"reduce_sum"}, "sum_with_reduced_out",
              [](const Array& x) { return sum(x, 0, {.out_sharding = P(Reduced{{"x"}})}); }),
      refusal({"reduce_sum"}, "sum_unreduced_axis_not_reduced",
              [](const Array& x) {
                return sum(reshard(x, P(nullptr, "x")), 0, {.out_sharding = P(Unreduced{{"x"}})});
              }),
      refusal({"dot_general"}, "dot_out_unreduced_max_kind",
              [](const Array& x) {
                return matmul(x, transpose(x), {.out_sharding = P(nullptr, nullptr, kMaxX)});
              }),
      refusal({"convert_element_type"}, "convert_unreduced_to_int",
              [](const Array& x) {
                return astype(sum(reshard(x, P("x")), 0, {.out_sharding = P(Unreduced{{"x"}})}),
                              int32);
              }),
      refusal({"reduce_max"}, "max_of_sum_unreduced",
              [](const Array& x) {
                return max(sum(reshard(x, P("x")), 0, {.out_sharding = P(Unreduced{{"x"}})}));
              }),
  };
}

static const RecordSet kSet(out_sharding_records);

}  // namespace rules
