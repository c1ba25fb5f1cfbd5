#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::vector<PartitionSpec>> unary_specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}, {P("y", "x")}};
}

std::vector<std::vector<PartitionSpec>> binary_specs() {
  return {{P(), P()},
          {P("x"), P("x")},
          {P("x", nullptr), P()},
          {P(), P(nullptr, "y")},
          {P("x", "y"), P("x", "y")},
          {P("x"), P(nullptr, "y")},
          {P(Axes{"x", "y"}), P()}};
}

Record unary(const char* prim, Array (*f)(const Array&), Gen gen = Gen::Any, DType dt = float32) {
  return {{prim},
          std::string(prim) + "_" + dtype_short_name(dt),
          {{{8, 4}, dt, gen}},
          one([f](const std::vector<Array>& a) { return f(a[0]); }),
          unary_specs(),
          2e-5};
}

Record binary(const char* prim, Array (*f)(const ArrayLike&, const ArrayLike&), Gen gen = Gen::Any,
              DType dt = float32) {
  return {{prim},
          std::string(prim) + "_" + dtype_short_name(dt),
          {{{8, 4}, dt, gen}, {{8, 4}, dt, gen}},
          one([f](const std::vector<Array>& a) { return f(a[0], a[1]); }),
          binary_specs(),
          2e-5};
}

}  // namespace

std::vector<Record> elementwise_records() {
  std::vector<Record> r = {
      unary("neg", neg),
      unary("neg", neg, Gen::Int, int32),
      unary("abs", abs),
      unary("abs", abs, Gen::Int, int32),
      unary("sign", sign),
      unary("floor", floor),
      unary("ceil", ceil),
      unary("round", round),
      unary("exp", exp),
      unary("exp2", exp2),
      unary("log", log, Gen::Pos),
      unary("log1p", log1p, Gen::Pos),
      unary("expm1", expm1),
      unary("sqrt", sqrt, Gen::Pos),
      unary("rsqrt", rsqrt, Gen::Pos),
      unary("square", square),
      unary("square", square, Gen::Int, int32),
      unary("sin", sin),
      unary("cos", cos),
      unary("tan", tan, Gen::Small),
      unary("tanh", tanh),
      unary("logistic", logistic),
      unary("erf", erf),
      unary("is_finite", isfinite),
      unary("not", logical_not, Gen::Bool, bool_),
      unary("not", logical_not, Gen::Int, int32),
      unary("exp", exp, Gen::Small, float16),
      unary("sin", sin, Gen::Any, bfloat16),
      binary("add", add),
      binary("add", add, Gen::Int, int32),
      binary("sub", subtract),
      binary("mul", multiply),
      binary("div", divide, Gen::Pos),
      binary("rem", rem, Gen::Pos),
      binary("rem", rem, Gen::Index, int32),
      binary("pow", power, Gen::Pos),
      binary("max", maximum),
      binary("min", minimum),
      binary("atan2", atan2),
      binary("and", logical_and, Gen::Bool, bool_),
      binary("or", logical_or, Gen::Bool, bool_),
      binary("xor", logical_xor, Gen::Bool, bool_),
      binary("and", bitwise_and, Gen::Int, int32),
      binary("eq", equal, Gen::Int, int32),
      binary("ne", not_equal, Gen::Int, int32),
      binary("lt", less),
      binary("le", less_equal),
      binary("gt", greater),
      binary("ge", greater_equal),
  };
  for (auto& x : r)
    x.rtol = x.name.find("f16") != std::string::npos || x.name.find("bf16") != std::string::npos
                 ? 1e-2
                 : x.rtol;
  // Broadcasting: size-1 dims and rank promotion, with a weak scalar.
  r.push_back({{"add", "broadcast_in_dim"},
               "add_broadcast",
               {{{8, 4}}, {{1, 4}}, {{4}}},
               one([](const std::vector<Array>& a) { return (a[0] + a[1]) * a[2] + 1.5; }),
               {{P(), P(), P()},
                {P("x"), P(), P()},
                {P("x", "y"), P(nullptr, "y"), P("y")},
                {P(nullptr, "y"), P(), P("y")}}});
  r.push_back({{"integer_pow"},
               "integer_pow",
               {{{8, 4}}},
               one([](const std::vector<Array>& a) {
                 return integer_pow(a[0], 3) + integer_pow(a[0], -2);
               }),
               unary_specs(),
               1e-4});
  r.push_back({{"select_n"},
               "where",
               {{{8, 4}}, {{8, 4}}},
               one([](const std::vector<Array>& a) { return where(a[0] > 0, a[0], a[1]); }),
               {{P(), P()}, {P("x"), P("x")}, {P("x", "y"), P("x", "y")}}});
  r.push_back({{"select_n"},
               "where_scalar_branch",
               {{{8, 4}}},
               one([](const std::vector<Array>& a) { return where(a[0] > 0, a[0], 0.0); }),
               unary_specs()});
  r.push_back({{"select_n"},
               "select_n_int",
               {{{8, 4}, int32, Gen::Index}, {{8, 4}}, {{8, 4}}, {{8, 4}}},
               one([](const std::vector<Array>& a) {
                 return select_n(a[0], {a[1], a[2], a[3]});
               }),
               {{P(), P(), P(), P()}, {P("x"), P("x"), P("x"), P("x")}}});
  r.push_back({{"clamp"},
               "clamp",
               {{{8, 4}}},
               one([](const std::vector<Array>& a) { return clamp(-0.5, a[0], 1.0); }),
               unary_specs()});
  // Array bounds laid out unlike x (the output follows x): the jvp's selects must
  // bring tangents and predicates to the output's layout (found by the fuzzer).
  r.push_back({{"clamp"},
               "clamp_bounds_sharded_unlike_x",
               {{{8, 4}}, {{8, 4}}, {{8, 4}}},
               one([](const std::vector<Array>& a) { return clamp(a[0] - 1.0, a[1], a[2] + 1.0); }),
               {{P(), P(), P()},
                {P("x"), P(), P()},
                {P(), P(), P(nullptr, "y")},
                {P(nullptr, "y"), P("x"), P()}}});
  r.back().grad = Record::Grad::NoFD;
  r.back().grad_why = "clamp has kinks where a bound meets x";
  r.push_back({{"clamp"},
               "clamp_of_reduced_x",
               {{{8, 4}}, {{8, 4}}, {{8, 4}}},
               one([](const std::vector<Array>& a) {
                 Array x = convert_element_type(a[1], float32, {.sharding = P(Reduced{{"x"}})});
                 return clamp(a[0] - 1.0, x, a[2] + 1.0);
               }),
               {{P(), P(), P()}, {P("x"), P(), P(nullptr, "y")}}});
  r.back().grad = Record::Grad::NoFD;
  r.back().grad_why = "clamp has kinks where a bound meets x";
  r.push_back({{"convert_element_type"},
               "astype_i32_f32",
               {{{8, 4}}},
               one([](const std::vector<Array>& a) { return a[0].astype(int32).astype(float32); }),
               unary_specs()});
  r.push_back({{"convert_element_type"},
               "astype_bool",
               {{{8, 4}, int32, Gen::Int}},
               one([](const std::vector<Array>& a) { return a[0].astype(bool_); }),
               unary_specs()});
  return r;
}

static const RecordSet kSet(elementwise_records);

}  // namespace rules
